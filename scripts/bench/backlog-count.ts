// The backpressure figures at a large store (the backlog counts items): the sum of the items of the
// unsettled orders, in all and of one client, as the store adapters run it (index-only over
// orders_unsettled_client, which includes each order's item count), beside the count of orders it replaced (run
// on the same store, so on the migrated index), on a fresh store of each kind with a history of settled orders and
// a backlog of queued ones spread over clients.
// Prints a table per store; BENCHMARKS.md quotes it.
//   node --import tsx scripts/bench/backlog-count.ts [--stores sqlite,postgres] [--history 950000] [--backlog 50000]
import { addCard, createClient } from '../../src/services/client-keys.js';
import * as postgresOrders from '../../src/store/postgres/orders.postgres.js';
import * as sqliteOrders from '../../src/store/sqlite/orders.sqlite.js';
import { freshStore, parseStoreKinds, stopPostgresServer, type StoreKind } from './stores.js';
import { runBench } from './processes.js';
import { benchArgs } from './bench-args.js';

const values = benchArgs({
  stores: 'sqlite,postgres',
  history: '950000',
  backlog: '50000',
  clients: '10',
  rounds: '50',
});
const HISTORY = Number(values.history);
const BACKLOG = Number(values.backlog);
const CLIENTS = Number(values.clients);
const ROUNDS = Number(values.rounds);

/** The statements timed: the counts of orders they replaced, and the sums of items the adapters run. */
function statements(kind: StoreKind) {
  const unsettled = kind === 'postgres' ? 'NOT settled' : "phase <> 'settled'";
  const adapter = kind === 'postgres' ? postgresOrders : sqliteOrders;
  const client = kind === 'postgres' ? '$1' : '?';
  return [
    ['orders (before)', `SELECT count(*) FROM orders WHERE ${unsettled}`, false],
    ['items', adapter.COUNT_UNSETTLED_SQL, false],
    [
      "a client's orders (before)",
      `SELECT count(*) FROM orders WHERE client_id = ${client} AND ${unsettled}`,
      true,
    ],
    ["a client's items", adapter.COUNT_UNSETTLED_OF_CLIENT_SQL, true],
  ] as const;
}

async function bench(kind: StoreKind): Promise<void> {
  const bench = await freshStore(kind, 'bench_backlog');
  const probe = bench.probe();
  try {
    const store = await bench.open();
    const clients: { clientId: number; cardId: number }[] = [];
    for (let c = 0; c < CLIENTS; c++) {
      const { clientId } = await createClient(store.clients, `bench ${c}`, 1);
      clients.push({ clientId, cardId: (await addCard(store.clients, clientId, false, 1)).cardId });
    }
    await store.close();
    const series =
      kind === 'postgres'
        ? `generate_series(1, ${HISTORY + BACKLOG}) AS g(i)`
        : `(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${HISTORY + BACKLOG})
             SELECT i FROM n) AS g`;
    const first = clients[0]!;
    // One client per order in turn; card ids follow client ids as they were created (one card each).
    await probe.exec(`
      INSERT INTO orders (client_id, request_id, request_hash, domain, currency, shipping_mode, ship_addr,
                          bill_addr, card_id, phase, created_at, item_count)
      SELECT ${first.clientId} + i % ${CLIENTS}, 'r' || i, 'h', 'bookmarket.com', 'USD', 'S', '{}', '{}',
             ${first.cardId} + i % ${CLIENTS}, CASE WHEN i > ${HISTORY} THEN 'queued' ELSE 'settled' END, i,
             1 + i % 7
        FROM ${series}`);
    await probe.exec(kind === 'postgres' ? 'VACUUM ANALYZE orders' : 'ANALYZE');
    console.log(`\n${kind}: ${HISTORY} settled orders, ${BACKLOG} queued, over ${CLIENTS} clients`);
    console.log('| figure | ms per read (mean) | result |');
    console.log('|---|---|---|');
    for (const [label, sql, ofClient] of statements(kind)) {
      const params = ofClient ? [first.clientId] : [];
      for (let i = 0; i < 3; i++) await probe.scalar(sql, ...params);
      const start = process.hrtime.bigint();
      let result: unknown;
      for (let i = 0; i < ROUNDS; i++) result = await probe.scalar(sql, ...params);
      const ms = Number(process.hrtime.bigint() - start) / ROUNDS / 1e6;
      console.log(`| ${label} | ${ms.toFixed(2)} | ${String(result)} |`);
    }
  } finally {
    await probe.close();
    await bench.remove();
  }
}

async function main(): Promise<void> {
  try {
    for (const kind of parseStoreKinds(values.stores)) await bench(kind);
  } finally {
    await stopPostgresServer();
  }
}

runBench(main);
