// The store port's contract: the backlog counted in items, per client and in all, the migration that added the
// count, and store.counts(). The same cases on whichever adapter the project names (SQLite or PostgreSQL), on a
// store of this file's own (test/helpers/store-contract.ts).
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { ItemStatus as S } from '../../src/domain/item-status.js';
import { addCard, createClient } from '../../src/services/client-keys.js';
import { openStore } from '../../src/store/open-store.js';
import { LISTINGS, VENDORS } from '../helpers/fixtures.js';
import {
  accepted,
  clientId,
  dir,
  MIDDLEMARCH,
  newOrder,
  probe,
  store,
  T0,
  WALDEN,
  useContractStore,
} from '../helpers/store-contract.js';
import { openProbe, TEST_STORE, testStoreEnv } from '../helpers/test-store.js';

useContractStore();

describe(`the store's counts of unsettled orders on ${TEST_STORE}`, () => {
  // The backlog counts items: an order of many items weighs what as many one-item orders weigh.
  const unsettledItemsOf = (clientId?: number) =>
    probe.scalar(
      `SELECT count(*) FROM order_items i JOIN orders o ON o.order_id = i.order_id
        WHERE o.phase <> 'settled'${clientId === undefined ? '' : ' AND o.client_id = ?'}`,
      ...(clientId === undefined ? [] : [clientId]),
    );

  it('counts the items of the orders not settled yet', async () => {
    const unsettled = Number(await unsettledItemsOf());
    expect(await store.orders.countUnsettled()).toBe(unsettled);
    await accepted([{ listingId: WALDEN, copies: 1 }]);
    expect(await store.orders.countUnsettled()).toBe(unsettled + 1);
    await accepted([
      { listingId: WALDEN, copies: 3 },
      { listingId: MIDDLEMARCH, copies: 2 },
    ]);
    await store.orders.acceptMany([newOrder([{ listingId: WALDEN, copies: 4 }])]);
    expect(await store.orders.countUnsettled()).toBe(unsettled + 10);
  });

  it("counts the items of a client's orders not settled yet, no other client's and no settled one", async () => {
    const other = (await createClient(store.clients, 'contract share', T0)).clientId;
    const otherCard = (await addCard(store.clients, other, false, T0)).cardId;
    const mine = Number(await store.orders.countUnsettledOfClient(clientId));
    expect(mine).toBe(Number(await unsettledItemsOf(clientId)));
    expect(await store.orders.countUnsettledOfClient(other)).toBe(0);
    await store.orders.acceptMany([
      newOrder([{ listingId: WALDEN, copies: 5 }], { clientId: other, cardId: otherCard }),
      newOrder([{ listingId: WALDEN, copies: 1 }], { clientId: other, cardId: otherCard }),
    ]);
    const settling = await accepted([{ listingId: MIDDLEMARCH, copies: 3 }]);
    expect(await store.orders.countUnsettledOfClient(other)).toBe(6);
    expect(await store.orders.countUnsettledOfClient(clientId)).toBe(mine + 3);
    await store.processing.beginAttempt(settling, { leaseUntil: T0 + 1, maxAttempts: 5 });
    const fail = { fromPhase: 'queued', itemStatus: S.FAILED, clearCharges: true, zeroTax: true } as const;
    const settled = { ...fail, orderId: settling, giveBack: [], ledger: null, now: T0, leaseFreeAt: T0 + 1 };
    expect(await store.processing.settle(settled)).toBe(true);
    expect(await store.orders.countUnsettledOfClient(clientId)).toBe(mine);
    expect(await store.orders.countUnsettledOfClient(999_999)).toBe(0);
  });

  it('counts the items of an order an older version accepted (no item count), and fills its count', async () => {
    const before = Number(await store.orders.countUnsettled());
    const orderId = await accepted([{ listingId: WALDEN, copies: 4 }]);
    await probe.exec(`UPDATE orders SET item_count = NULL WHERE order_id = ${orderId}`);
    expect(await store.orders.countUnsettled()).toBe(before + 4);
    expect(await store.orders.countUnsettledOfClient(clientId)).toBe(
      Number(await unsettledItemsOf(clientId)),
    );
    await store.migrate();
    expect(await probe.scalar('SELECT item_count FROM orders WHERE order_id = ?', orderId)).toBe(4);
    expect(await store.orders.countUnsettled()).toBe(before + 4);
  });

  it('upgrades a store of the version before: the migration adds the count and fills it for unsettled orders', async () => {
    const older = await testStoreEnv(fs.mkdtempSync(path.join(dir, 'older-')));
    const upgraded = await openStore(loadConfig(older.env), 'test', () => undefined);
    const raw = openProbe(older.env);
    try {
      await upgraded.catalog.importCatalog(VENDORS, LISTINGS);
      const owner = (await createClient(upgraded.clients, 'older', T0)).clientId;
      const card = (await addCard(upgraded.clients, owner, false, T0)).cardId;
      const ids = { clientId: owner, cardId: card };
      await upgraded.orders.accept(newOrder([{ listingId: WALDEN, copies: 7 }], ids));
      await upgraded.orders.acceptMany([newOrder([{ listingId: WALDEN, copies: 2 }], ids)]);
      // The schema as the version before left it: no item count, the client's index without it.
      const version = TEST_STORE === 'postgres' ? 16 : 14;
      const unsettled = TEST_STORE === 'postgres' ? 'NOT settled' : "phase <> 'settled'";
      await raw.exec(`DELETE FROM schema_migrations WHERE version = ${version};
        DROP INDEX orders_unsettled_client;
        ALTER TABLE orders DROP COLUMN item_count;
        CREATE INDEX orders_unsettled_client ON orders (client_id) WHERE ${unsettled};`);
      expect(await upgraded.migrate()).toEqual([version]);
      expect(await raw.all('SELECT item_count FROM orders ORDER BY order_id')).toEqual([
        { item_count: 7 },
        { item_count: 2 },
      ]);
      expect(await upgraded.orders.countUnsettledOfClient(owner)).toBe(9);
      // The index is rebuilt by `admin migrate`'s step; the counts are the same before and after it.
      expect((await upgraded.steps.list()).find((s) => s.version === version)?.done).toBe(false);
      await upgraded.steps.run({ batchSize: 100 });
      expect((await upgraded.steps.list()).find((s) => s.version === version)?.done).toBe(true);
      expect(await upgraded.orders.countUnsettledOfClient(owner)).toBe(9);
    } finally {
      await raw.close();
      await upgraded.close();
      await older.drop();
    }
  });

  it('counts items by status and unsettled orders by phase, with their items', async () => {
    const counts = await store.counts();
    const items = await probe.all<{ status: number; n: number }>(
      'SELECT status, count(*) AS n FROM order_items GROUP BY status',
    );
    expect(counts.itemsByStatus.map((c) => [c.status, c.count]).sort((a, b) => a[0]! - b[0]!)).toEqual(
      items.map((r) => [r.status, r.n]).sort((a, b) => a[0]! - b[0]!),
    );
    const queued = await probe.scalar("SELECT count(*) FROM orders WHERE phase = 'queued'");
    expect(counts.unsettledByPhase.find((c) => c.phase === 'queued')?.count).toBe(queued);
    const queuedItems = await probe.scalar(
      "SELECT count(*) FROM order_items i JOIN orders o ON o.order_id = i.order_id WHERE o.phase = 'queued'",
    );
    expect(counts.unsettledByPhase.find((c) => c.phase === 'queued')?.items).toBe(queuedItems);
    expect(Number(queuedItems)).toBeGreaterThan(Number(queued));
  });
});
