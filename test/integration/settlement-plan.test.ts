import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openStore } from '../../src/store/open-store.js';
import { SETTLE_ITEMS_SQL as POSTGRES_SETTLE_ITEMS } from '../../src/store/postgres/order-functions.js';
import { SETTLE_ITEMS_SQL as SQLITE_SETTLE_ITEMS } from '../../src/store/sqlite/processing.js';
import type { Probe } from '../../src/store/store.probe.js';
import { TEST_STORE, openProbe, testStoreEnv, type TestStoreEnv } from '../helpers/test-store.js';

// A settlement finds its order's pending items by the order, on a store that has no statistics yet (a new
// database; SQLite never gathers them unless told): without them both planners took order_items_status for
// `status = 1`, the index of every pending item of every order, so that each settlement read the whole backlog.
// Both planners chose so on an empty table already: the plans are checked on the new store as migrated.

let dir: string;
let storeEnv: TestStoreEnv;
let probe: Probe;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settlement-plan-'));
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
}
