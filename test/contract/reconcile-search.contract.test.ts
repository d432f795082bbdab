// The store port's contract: paging stale orders and items, and the order key a search cursor stands for. The
// same cases on whichever adapter the project names (SQLite or PostgreSQL), on a store of this file's own
// (test/helpers/store-contract.ts).
import { describe, expect, it } from 'vitest';
import { ItemStatus as S } from '../../src/domain/item-status.js';
import { LISTINGS } from '../helpers/fixtures.js';
import { accepted, clientId, store, WALDEN, useContractStore } from '../helpers/store-contract.js';
import { TEST_STORE } from '../helpers/test-store.js';

useContractStore();

describe(`the store's reconciliation and search keys on ${TEST_STORE}`, () => {
  it('pages stale orders and items by key, oldest first', async () => {
    const before = await store.reconcile.staleOrders(Number.MAX_SAFE_INTEGER, 1000);
    const ids = [
      await accepted([{ listingId: WALDEN, copies: 1 }]),
      await accepted([{ listingId: WALDEN, copies: 1 }]),
      await accepted([{ listingId: WALDEN, copies: 1 }]),
    ];
    const all = await store.reconcile.staleOrders(Number.MAX_SAFE_INTEGER, 1000);
    expect(all.slice(before.length).map((o) => o.orderId)).toEqual(ids);
    const firstTwo = await store.reconcile.staleOrders(Number.MAX_SAFE_INTEGER, 2);
    const rest = await store.reconcile.staleOrders(Number.MAX_SAFE_INTEGER, 1000, firstTwo.at(-1));
    expect([...firstTwo, ...rest]).toEqual(all);
    const created = all.find((o) => o.orderId === ids[1])!.createdAt;
    expect((await store.reconcile.staleOrders(created, 1000)).map((o) => o.orderId)).not.toContain(ids[1]);

    const queued = await store.reconcile.staleItems(S.QUEUED, Number.MAX_SAFE_INTEGER, 1000);
    expect(queued.length).toBeGreaterThanOrEqual(3);
    const page = await store.reconcile.staleItems(S.QUEUED, Number.MAX_SAFE_INTEGER, 1, queued[0]);
    expect(page).toEqual([queued[1]]);
  });

  it("finds a client's order key for a cursor, never another client's", async () => {
    const orderId = await accepted([{ listingId: LISTINGS[0]!.listingId, copies: 1 }]);
    const { createdAt } = (await store.orders.getForClient(clientId, orderId))!.order;
    expect(await store.search.orderKey(clientId, orderId)).toEqual({ createdAt, orderId });
    expect(await store.search.orderKey(clientId + 1, orderId)).toBeNull();
    expect(await store.search.orderKey(clientId, 2 ** 40)).toBeNull();
    expect(store.search.cursorKey.length).toBe(32);
  });
});
