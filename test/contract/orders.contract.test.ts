// The store port's contract: accepting orders once per request id, alone, concurrently and in batches, and
// reading them back. The same cases on whichever adapter the project names (SQLite or PostgreSQL), on a store of
// this file's own (test/helpers/store-contract.ts).
import { describe, expect, it } from 'vitest';
import { ItemStatus as S } from '../../src/domain/item-status.js';
import { createClient } from '../../src/services/client-keys.js';
import {
  accepted,
  address,
  clientId,
  MIDDLEMARCH,
  newOrder,
  probe,
  store,
  T0,
  WALDEN,
  useContractStore,
} from '../helpers/store-contract.js';
import { TEST_STORE } from '../helpers/test-store.js';

useContractStore();

describe(`the store's orders on ${TEST_STORE}`, () => {
  it('accepts an order once per request id: the same hash is a duplicate, another is a conflict', async () => {
    const order = newOrder([{ listingId: WALDEN, copies: 2 }]);
    const first = await store.orders.accept(order);
    expect(first.kind).toBe('created');
    const orderId = (first as { orderId: number }).orderId;
    // A new order comes back as it was stored: what a read just after the acceptance finds.
    expect((first as { stored: unknown }).stored).toEqual(await store.orders.get(orderId));
    expect(await store.orders.accept(order)).toEqual({ kind: 'duplicate', orderId });
    expect(await store.orders.accept({ ...order, requestHash: 'other' })).toEqual({ kind: 'conflict' });
    const stored = (await store.orders.getForClient(clientId, orderId))!;
    expect(stored.order).toMatchObject({
      phase: 'queued',
      attempts: 0,
      shipAddr: address,
      createdAt: order.createdAt,
    });
    expect(stored.items.map((i) => [i.status, i.costCents, i.shipcostCents, i.updatedAt])).toEqual([
      [S.QUEUED, 1000, 0, order.createdAt],
      [S.QUEUED, 1000, 0, order.createdAt],
    ]);
    expect(await store.orders.getForClient(clientId + 1000, orderId)).toBeNull();
    expect(await store.orders.phaseOf(orderId)).toBe('queued');
  });

  it("answers gets and catalog reads asked at once each as alone: a client's own order only", async () => {
    const first = await accepted([{ listingId: WALDEN, copies: 1 }]);
    const second = await accepted([{ listingId: MIDDLEMARCH, copies: 2 }]);
    const stranger = clientId + 1000;
    const [alone, ...together] = [
      await store.orders.getForClient(clientId, first),
      ...(await Promise.all([
        store.orders.getForClient(clientId, first),
        store.orders.getForClient(stranger, second),
        store.orders.getForClient(clientId, second),
        store.orders.getForClient(clientId, 999_999_999),
      ])),
    ];
    expect(together).toEqual([alone, null, await store.orders.get(second), null]);
    const catalogs = await Promise.all([
      store.catalog.loadForPricing([WALDEN, MIDDLEMARCH]),
      store.catalog.loadForPricing([999_999, MIDDLEMARCH]),
    ]);
    expect(catalogs).toEqual([
      await store.catalog.loadForPricing([WALDEN, MIDDLEMARCH]),
      await store.catalog.loadForPricing([MIDDLEMARCH]),
    ]);
    expect(catalogs.map((c) => [...c.listings.keys()])).toEqual([[WALDEN, MIDDLEMARCH], [MIDDLEMARCH]]);
  });

  it('creates one order for concurrent duplicates', async () => {
    const order = newOrder([{ listingId: WALDEN, copies: 1 }]);
    const results = await Promise.all(Array.from({ length: 8 }, () => store.orders.accept(order)));
    expect(results.filter((r) => r.kind === 'created')).toHaveLength(1);
    expect(new Set(results.map((r) => (r as { orderId: number }).orderId)).size).toBe(1);
    expect(await probe.scalar('SELECT count(*) FROM orders WHERE request_id = ?', order.requestId)).toBe(1);
  });

  it('accepts a batch in one call: each order as accept would, results in request order', async () => {
    const earlier = newOrder([{ listingId: WALDEN, copies: 1 }]);
    const first = await store.orders.accept(earlier);
    const fresh = [
      newOrder([
        { listingId: WALDEN, copies: 2 },
        { listingId: MIDDLEMARCH, copies: 1 },
      ]),
      newOrder([{ listingId: MIDDLEMARCH, copies: 1 }]),
    ];
    const sameKeyTwice = newOrder([{ listingId: WALDEN, copies: 1 }]);
    const results = await store.orders.acceptMany([
      fresh[0]!,
      earlier,
      { ...earlier, requestId: earlier.requestId, requestHash: 'other' },
      fresh[1]!,
      sameKeyTwice,
      sameKeyTwice,
    ]);
    expect(results.map((r) => r.kind)).toEqual([
      'created',
      'duplicate',
      'conflict',
      'created',
      'created',
      'duplicate',
    ]);
    expect(results[1]).toEqual({ kind: 'duplicate', orderId: (first as { orderId: number }).orderId });
    expect(results[5]).toEqual({ kind: 'duplicate', orderId: (results[4] as { orderId: number }).orderId });
    const ids = results.flatMap((r) => (r.kind === 'created' ? [r.orderId] : []));
    const stored = await store.orders.getMany([...ids, ...ids, 999_999_999]);
    // Each new order comes back as the batch stored it: what a read after the commit finds.
    for (const r of results)
      if (r.kind === 'created') expect(r.stored).toEqual(stored.find((o) => o.order.orderId === r.orderId));
    expect(stored.map((o) => o.order.orderId).sort((a, b) => a - b)).toEqual([...ids].sort((a, b) => a - b));
    const byId = new Map(stored.map((o) => [o.order.orderId, o]));
    // Read by item id, the items follow the order's listings, as a single acceptance stores them.
    const items = byId.get(ids[0]!)!.items;
    expect(items.map((i) => [i.lineNo, i.listingId, i.status])).toEqual([
      [0, WALDEN, S.QUEUED],
      [0, WALDEN, S.QUEUED],
      [1, MIDDLEMARCH, S.QUEUED],
    ]);
    expect(byId.get(ids[1]!)!.order).toMatchObject({ requestId: fresh[1]!.requestId, phase: 'queued' });
    expect(await store.orders.acceptMany([])).toEqual([]);
    expect(await store.orders.getMany([])).toEqual([]);
  });

  it('stores nothing of a batch when one of its orders fails', async () => {
    const before = await probe.scalar('SELECT count(*) FROM orders');
    const good = newOrder([{ listingId: WALDEN, copies: 1 }]);
    const broken = newOrder([{ listingId: WALDEN, copies: 1 }], { cardId: 999_999 });
    await expect(store.orders.acceptMany([good, broken])).rejects.toThrow();
    expect(await probe.scalar('SELECT count(*) FROM orders')).toBe(before);
    expect(await store.orders.accept(good)).toMatchObject({ kind: 'created' });
  });

  it('creates one order per key for concurrent batches sharing keys in any order', async () => {
    const orders = Array.from({ length: 6 }, () => newOrder([{ listingId: WALDEN, copies: 1 }]));
    const batches = await Promise.all(
      Array.from({ length: 4 }, (_, n) => store.orders.acceptMany(n % 2 ? [...orders].reverse() : orders)),
    );
    const created = batches.flat().filter((r) => r.kind === 'created');
    expect(created).toHaveLength(orders.length);
    for (const order of orders)
      expect(await probe.scalar('SELECT count(*) FROM orders WHERE request_id = ?', order.requestId)).toBe(1);
  });
});

// Defence in depth behind the edge's check of text (domain/storable-text.ts): should an order holding text that
// the store refuses ever reach it, the orders accepted together with it (group-commit.ts) are accepted all the
// same, each exactly once, and only that order fails.
describe('a group commit that one order poisons', () => {
  it.each([
    ['U+0000', 'Eve\u0000'],
    ['a lone surrogate', 'Eve\ud800'],
  ])(
    'when an order holding %s is accepted with others, then each other order is stored once',
    async (_, name) => {
      const poisoner = (await createClient(store.clients, `poisoner ${name.length}`, T0)).clientId;
      const count = async () =>
        Number(await probe.scalar('SELECT COUNT(*) FROM orders WHERE client_id = ?', clientId));
      const before = await count();
      const good = Array.from({ length: 6 }, () => newOrder([{ listingId: WALDEN, copies: 1 }]));
      const poisoned = newOrder([{ listingId: WALDEN, copies: 1 }], {
        clientId: poisoner,
        shipAddr: { ...address, name },
      });
      const outcomes = await Promise.allSettled(
        [...good.slice(0, 3), poisoned, ...good.slice(3)].map((order) => store.orders.accept(order)),
      );
      const others = [...outcomes.slice(0, 3), ...outcomes.slice(4)];
      expect(others.map((o) => (o.status === 'fulfilled' ? o.value.kind : o.reason))).toEqual(
        Array(6).fill('created'),
      );
      expect(await count()).toBe(before + 6);
      // PostgreSQL refuses the text, SQLite holds it: the edge refuses it on both (test/integration/poisoned-text).
      expect(outcomes[3]!.status).toBe(TEST_STORE === 'postgres' ? 'rejected' : 'fulfilled');
    },
  );
});

describe("another client's order", () => {
  it('is absent for getForClient and getManyForClients; its owner gets it with its items', async () => {
    const orderId = await accepted([
      { listingId: WALDEN, copies: 2 },
      { listingId: MIDDLEMARCH, copies: 1 },
    ]);
    const stranger = (await createClient(store.clients, 'stranger', T0)).clientId;
    expect(await store.orders.getForClient(stranger, orderId)).toBeNull();
    const mine = await store.orders.getForClient(clientId, orderId);
    expect(mine?.items).toHaveLength(3);
    const asked = await store.orders.getManyForClients([
      { clientId: stranger, orderId },
      { clientId, orderId },
      { clientId, orderId: 999_999_999 },
      { clientId, orderId },
    ]);
    expect(asked).toEqual([mine]);
    expect(await store.orders.getManyForClients([{ clientId: stranger, orderId }])).toEqual([]);
    expect(await store.orders.getManyForClients([])).toEqual([]);
  });
});

// PostgreSQL numbers the items of an INSERT … SELECT as it inserts them, and promises no order for that, nor for
// the rows its RETURNING gives: each item's id must come back paired with the item itself, never by position.
describe('the items of a new order', () => {
  it('each come back with their own id, whatever order the store numbers them in', async () => {
    // Copies that differ (here by cost), so an id paired with the wrong copy shows.
    const varied = (lines: { listingId: number; copies: number }[]) => {
      const order = newOrder(lines);
      return { ...order, items: order.items.map((item, k) => ({ ...item, costCents: 1000 + k })) };
    };
    const lines = [
      { listingId: WALDEN, copies: 3 },
      { listingId: MIDDLEMARCH, copies: 2 },
    ];
    // On PostgreSQL the ids descend for this case: the store numbers the items against their request order.
    const descending = TEST_STORE === 'postgres';
    if (descending) {
      const next = Number(await probe.scalar('SELECT max(order_item_id) FROM order_items')) + 1_000_000;
      await probe.exec(
        `ALTER TABLE order_items ALTER COLUMN order_item_id SET INCREMENT BY -1 RESTART WITH ${next}`,
      );
    }
    try {
      const single = await store.orders.accept(varied(lines));
      const batch = await store.orders.acceptMany([varied(lines), varied(lines)]);
      for (const result of [single, ...batch]) {
        if (result.kind !== 'created') throw new Error(`expected a new order, got ${result.kind}`);
        // The answer is what a read just after the acceptance finds: each id with its own copy's cost.
        expect(result.stored).toEqual(await store.orders.get(result.orderId));
        expect(result.stored.items.map((i) => i.costCents).sort()).toEqual([1000, 1001, 1002, 1003, 1004]);
      }
    } finally {
      if (descending) {
        const next = Number(await probe.scalar('SELECT max(order_item_id) FROM order_items')) + 1;
        await probe.exec(
          `ALTER TABLE order_items ALTER COLUMN order_item_id SET INCREMENT BY 1 RESTART WITH ${next}`,
        );
      }
    }
  });
});
