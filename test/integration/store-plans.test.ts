import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { addCard, createClient } from '../../src/services/client-keys.js';
import { openStore } from '../../src/store/open-store.js';
import { SETTLE_ITEMS_SQL as POSTGRES_SETTLE_ITEMS } from '../../src/store/postgres/order-functions.js';
import {
  COUNT_UNSETTLED_OF_CLIENT_SQL as POSTGRES_COUNT_OF_CLIENT,
  COUNT_UNSETTLED_SQL as POSTGRES_COUNT,
} from '../../src/store/postgres/orders.postgres.js';
import { STALE_ORDERS_SQL as POSTGRES_STALE_ORDERS } from '../../src/store/postgres/reconcile.postgres.js';
import {
  COUNT_UNSETTLED_OF_CLIENT_SQL as SQLITE_COUNT_OF_CLIENT,
  COUNT_UNSETTLED_SQL as SQLITE_COUNT,
} from '../../src/store/sqlite/orders.sqlite.js';
import { SETTLE_ITEMS_SQL as SQLITE_SETTLE_ITEMS } from '../../src/store/sqlite/processing.sqlite.js';
import { STALE_ORDERS_SQL as SQLITE_STALE_ORDERS } from '../../src/store/sqlite/reconcile.sqlite.js';
import type { Probe } from '../helpers/store.probe.js';
import { TEST_STORE, openProbe, testStoreEnv, type TestStoreEnv } from '../helpers/test-store.js';

// A settlement finds its order's pending items by the order, on a store that has no statistics yet (a new
// database; SQLite never gathers them unless told): without them both planners took order_items_status for
// `status = 1`, the index of every pending item of every order, so that each settlement read the whole backlog.
// Both planners chose so on an empty table already: the plans are checked on the new store as migrated. So is
// reconciliation's page of stale orders, which read every unsettled order and sorted them while orders_unsettled
// was on (phase, created_at), and the counts of unsettled orders, which must stay on an index of those alone.

let dir: string;
let storeEnv: TestStoreEnv;
let probe: Probe;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'store-plans-'));
  storeEnv = await testStoreEnv(dir);
  await (await openStore(loadConfig(storeEnv.env), 'test')).close();
  probe = openProbe(storeEnv.env);
});

afterAll(async () => {
  await probe?.close();
  await storeEnv?.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

if (TEST_STORE === 'sqlite') {
  describe('the settlement on SQLite', () => {
    it("reads the order's items by their order, not every pending item", async () => {
      const plan = await probe.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${SQLITE_SETTLE_ITEMS}`, {
        status: 2,
        now: 1,
        clear: 0,
        orderId: 1,
      });
      const details = plan.map((row) => row.detail).join('\n');
      expect(details).toContain('USING INDEX order_items_order (order_id=?)');
      expect(details).not.toContain('order_items_status');
    });
  });

  describe('the unsettled orders on SQLite', () => {
    const planOf = async (sql: string, ...params: unknown[]) =>
      (await probe.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, ...params))
        .map((row) => row.detail)
        .join('\n');

    it("pages reconciliation's stale orders in the index's order, with no sort", async () => {
      const details = await planOf(SQLITE_STALE_ORDERS, 1, 0, 0, 100);
      expect(details).toMatch(/USING INDEX orders_unsettled \(created_at/);
      expect(details).not.toContain('TEMP B-TREE');
    });

    it('counts unsettled orders, in all and by phase, on an index of those alone', async () => {
      expect(await planOf("SELECT count(*) FROM orders WHERE phase <> 'settled'")).toMatch(
        /USING COVERING INDEX orders_unsettled/,
      );
      expect(
        await planOf("SELECT phase, count(*) AS count FROM orders WHERE phase <> 'settled' GROUP BY phase"),
      ).toContain('USING COVERING INDEX orders_unsettled');
    });

    it('sums the items of unsettled orders, in all and of a client, on an index of those alone', async () => {
      expect(await planOf(SQLITE_COUNT)).toContain('SCAN o USING COVERING INDEX orders_unsettled_client');
      expect(await planOf(SQLITE_COUNT_OF_CLIENT, 1)).toContain(
        'SEARCH o USING COVERING INDEX orders_unsettled_client (client_id=?)',
      );
    });
  });
}

if (TEST_STORE === 'postgres') {
  describe('the settlement on PostgreSQL', () => {
    it("reads the order's items by their order, not every pending item", async () => {
      const [explained] = await probe.all<{ 'QUERY PLAN': unknown }>(
        `EXPLAIN (FORMAT JSON) ${POSTGRES_SETTLE_ITEMS}`,
        1,
        2,
        1,
        false,
      );
      const plan = JSON.stringify(explained!['QUERY PLAN']);
      expect(plan).toContain('"Index Name":"order_items_order"');
      expect(plan).not.toContain('order_items_status');
    });
  });

  describe('the unsettled orders on PostgreSQL', () => {
    // PostgreSQL plans by its statistics: on an empty table any plan is cheap, so the page is planned on a
    // store with a history of 160,000 settled orders and a backlog of 20,000, analysed (with a backlog of two
    // thirds of the orders, reading the table is rightly cheaper than the index of the unsettled ones).
    beforeAll(async () => {
      const store = await openStore(loadConfig(storeEnv.env), 'test');
      const { clientId } = await createClient(store.clients, 'plans', 1);
      const { cardId } = await addCard(store.clients, clientId, false, 1);
      await store.close();
      await probe.exec(`
        INSERT INTO orders (client_id, request_id, request_hash, domain, currency, shipping_mode, ship_addr,
                            bill_addr, card_id, phase, created_at)
        SELECT ${clientId}, 'r' || n, 'h', 'bookmarket.com', 'USD', 'S', '{}', '{}', ${cardId},
               CASE WHEN n > 10000 THEN 'queued' ELSE 'settled' END, n
          FROM generate_series(1, 30000) AS n;
        INSERT INTO orders (client_id, request_id, request_hash, domain, currency, shipping_mode, ship_addr,
                            bill_addr, card_id, phase, created_at, item_count)
        SELECT ${clientId}, 's' || n, 'h', 'bookmarket.com', 'USD', 'S', '{}', '{}', ${cardId}, 'settled', n, 1
          FROM generate_series(30001, 180000) AS n;
        ANALYZE orders;`);
    });

    it("pages reconciliation's stale orders in the index's order, with no sort", async () => {
      const [explained] = await probe.all<{ 'QUERY PLAN': unknown }>(
        `EXPLAIN (FORMAT JSON) ${POSTGRES_STALE_ORDERS}`,
        40_000,
        0,
        0,
        100,
      );
      const plan = JSON.stringify(explained!['QUERY PLAN']);
      expect(plan).toContain('"Index Name":"orders_unsettled"');
      expect(plan).not.toContain('"Node Type":"Sort"');
    });

    it("names the phase in none of the orders' indexes, so that a reservation updates its order in place", async () => {
      // An index naming a column (as a key or in its predicate) makes every change of that column a new entry in
      // each index of the table; the unsettled orders are found by `settled`, which a reservation leaves as it is.
      const named = await probe.all<{ name: string }>(
        `SELECT indexrelid::regclass::text AS name FROM pg_index
          WHERE indrelid = 'orders'::regclass AND pg_get_indexdef(indexrelid) ~ '\\mphase\\M'`,
      );
      expect(named).toEqual([]);
      const [counted] = await probe.all<{ 'QUERY PLAN': unknown }>(
        `EXPLAIN (FORMAT JSON) SELECT count(*) FROM orders WHERE client_id = $1 AND NOT settled`,
        1,
      );
      expect(JSON.stringify(counted!['QUERY PLAN'])).toContain('"Index Name":"orders_unsettled_client"');
    });

    it('sums the items of unsettled orders, in all and of a client, by an index-only scan', async () => {
      for (const [sql, ...params] of [[POSTGRES_COUNT], [POSTGRES_COUNT_OF_CLIENT, 1]] as const) {
        const [explained] = await probe.all<{ 'QUERY PLAN': unknown }>(
          `EXPLAIN (FORMAT JSON) ${sql}`,
          ...params,
        );
        const plan = JSON.stringify(explained!['QUERY PLAN']);
        expect(plan).toContain('"Node Type":"Index Only Scan","Parent Relationship":"Outer"');
        expect(plan).toMatch(
          /"Index Only Scan","Parent Relationship":"Outer".*?"Index Name":"orders_unsettled_client"/,
        );
      }
    });
  });
}
