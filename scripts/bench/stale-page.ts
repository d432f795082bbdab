// Reconciliation's page of stale orders on SQLite with a backlog (migration 13, orders_unsettled by age): a new
// store with a history of settled orders and a backlog of queued ones, the page of 100 and the count of unsettled
// orders timed on the index as migrated, then on the index as it was before (phase, created_at), in one run.
// Prints the figures; BENCHMARKS.md quotes them.
//   node --import tsx scripts/bench/stale-page.ts [--backlog 50000] [--history 100000]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { loadConfig } from '../../src/config/config.js';
import { addCard, createClient } from '../../src/services/client-keys.js';
import { openStore } from '../../src/store/open-store.js';
import { STALE_ORDERS_SQL } from '../../src/store/sqlite/reconcile.sqlite.js';
import { benchArgs } from './bench-args.js';

const values = benchArgs({
  backlog: '50000',
  history: '100000',
});
const BACKLOG = Number(values.backlog);
const HISTORY = Number(values.history);
const COUNT_SQL = "SELECT count(*) FROM orders WHERE phase <> 'settled'";

/** Mean milliseconds of `fn` over `rounds` calls, after three unmeasured ones. */
function timed(fn: () => unknown, rounds: number): number {
  for (let i = 0; i < 3; i += 1) fn();
  const start = process.hrtime.bigint();
  for (let i = 0; i < rounds; i += 1) fn();
  return Number(process.hrtime.bigint() - start) / rounds / 1e6;
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-stale-page-'));
  try {
    const dbPath = path.join(dir, 'orders.db');
    const config = loadConfig({ DB_PATH: dbPath, SECRETS_KEY: Buffer.alloc(32, 7).toString('base64') });
    const store = await openStore(config, 'bench', () => undefined);
    const { clientId } = await createClient(store.clients, 'bench', 1);
    const { cardId } = await addCard(store.clients, clientId, false, 1);
    await store.close();

    const db = new Database(dbPath);
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${HISTORY + BACKLOG})
      INSERT INTO orders (client_id, request_id, request_hash, domain, currency, shipping_mode, ship_addr,
                          bill_addr, card_id, phase, created_at)
      SELECT ${clientId}, 'r' || i, 'h', 'bookmarket.com', 'USD', 'S', '{}', '{}', ${cardId},
             CASE WHEN i > ${HISTORY} THEN 'queued' ELSE 'settled' END, i FROM n`);
    const measure = (label: string) => {
      const page = db.prepare(STALE_ORDERS_SQL);
      const count = db.prepare(COUNT_SQL).pluck();
      const plan = db
        .prepare<unknown[], { detail: string }>(`EXPLAIN QUERY PLAN ${STALE_ORDERS_SQL}`)
        .all(1, 0, 0, 100)
        .map((row) => row.detail)
        .join('; ');
      const pageMs = timed(() => page.all(Number.MAX_SAFE_INTEGER, 0, 0, 100), 20);
      const countMs = timed(() => count.get(), 200);
      console.log(`| ${label} | ${pageMs.toFixed(2)} | ${countMs.toFixed(2)} | ${plan} |`);
    };
    console.log(`SQLite, ${HISTORY} settled orders and ${BACKLOG} queued:`);
    console.log(
      '| orders_unsettled | page of 100 stale orders, ms | count of unsettled orders, ms | plan of the page |',
    );
    console.log('|---|--:|--:|---|');
    measure('(created_at, order_id, phase), as migrated');
    db.exec(`DROP INDEX orders_unsettled;
      CREATE INDEX orders_unsettled ON orders (phase, created_at) WHERE phase <> 'settled';`);
    measure('(phase, created_at), before migration 13');
    db.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
