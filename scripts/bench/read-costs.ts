// Reads charged by their cost: what a search page costs by `limit` and the items of its orders, and what another
// client (A) sees while one client (B) attacks what reads share, each attack with A measured alone just before it.
// Page cost: one web process with no rate limit; clients whose orders hold 1, 25 and 250 items (--page-orders
// each, test/helpers/heavy-orders.ts), `limit` 20 and 100, --iterations searches one after another per row.
// The attacks (test/helpers/read-attacks.ts, the shapes of the integration tests), --seconds each, against a web
// with the rate limit at its default unless said: `pages` (100 searches of limit=100 at once, a burst a second, of
// a client of 200 orders of 250 items), `queries` (16 KB of one repeated parameter, 4 at once every 200 ms),
// `searches` (20 searches in flight that read every item of a window of --wide-orders orders of 125 items: on
// PostgreSQL with DATABASE_TIMEOUT_MS=600 and no rate limit, as pool-share.test.ts; on SQLite with
// DATABASE_TIMEOUT_MS at a third of such a search's time alone, so that each is abandoned, the web's threads and
// RSS sampled), `receivers` (a worker process; 8 receivers of B answering 200 after 6 s with 992 deliveries
// waiting, A's events from its orders, their lateness). --write replaces "Reads charged by their cost".
//   node --import tsx scripts/bench/read-costs.ts [--stores sqlite,postgres]
//     [--attacks pages,queries,searches,receivers] [--seconds 10] [--iterations 100] [--page-orders 200]
//     [--wide-orders 2120] [--write]
import os from 'node:os';
import { WIDE_HISTORY } from '../../test/helpers/read-attacks.js';
import { ensureRedis } from '../redis.js';
import { benchArgs } from './bench-args.js';
import { printSection } from './benchmarks-file.js';
import { RUNTIME, runBench } from './processes.js';
import { attacks } from './read-costs-attacks.js';
import { ATTACKS, readCostsSection, type AttackName, type StoreRun } from './read-costs-report.js';
import { NO_RATE, pageCosts, prepare, withWeb, type ReadBench } from './read-costs-setup.js';
import { parseStoreKinds, stopServers, stopServersOnInterrupt, type StoreKind } from './stores.js';

const values = benchArgs({
  stores: 'sqlite,postgres',
  attacks: ATTACKS.join(','),
  seconds: '10',
  iterations: '100',
  'page-orders': '200',
  'wide-orders': String(WIDE_HISTORY.orders),
  write: false,
});

const asked = values.attacks.split(',').map((a) => {
  if (!(ATTACKS as readonly string[]).includes(a))
    throw new Error(`unknown attack '${a}': ${ATTACKS.join(', ')}`);
  return a as AttackName;
});

async function runStore(bench: ReadBench, kind: StoreKind): Promise<StoreRun> {
  const p = await prepare(kind, bench);
  try {
    const pages = await withWeb(p, NO_RATE, (baseUrl) => pageCosts(p, baseUrl));
    bench.say(`${kind}: page costs taken`);
    return { kind, pages, attacks: await attacks(p) };
  } finally {
    await p.store.remove();
  }
}

async function main() {
  const redis = await ensureRedis();
  stopServersOnInterrupt(redis);
  const bench: ReadBench = {
    seconds: Number(values.seconds),
    iterations: Number(values.iterations),
    pageOrders: Number(values['page-orders']),
    wide: { ...WIDE_HISTORY, orders: Number(values['wide-orders']) },
    attacks: asked,
    redis,
    say: (line) => process.stderr.write(`[bench-reads] ${line}\n`),
  };
  const kinds = parseStoreKinds(values.stores);
  const load0 = os.loadavg()[0]!;
  const runs: StoreRun[] = [];
  try {
    for (const kind of kinds) runs.push(await runStore(bench, kind));
  } finally {
    await stopServers(redis);
  }
  const command = [
    `${RUNTIME === 'tsx' ? 'BENCH_RUNTIME=tsx ' : ''}node --import tsx scripts/bench/read-costs.ts`,
    `--stores ${kinds.join(',')}`,
    ...(asked.length === ATTACKS.length ? [] : [`--attacks ${asked.join(',')}`]),
    `--seconds ${bench.seconds} --iterations ${bench.iterations} --page-orders ${bench.pageOrders} --wide-orders ${bench.wide.orders}`,
  ].join(' ');
  const body = readCostsSection(runs, {
    command,
    ...bench,
    load: [load0, os.loadavg()[0]!],
    cores: os.cpus().length,
  });
  printSection('Reads charged by their cost', body, values.write);
}

runBench(main, { exitWhenDone: true });
