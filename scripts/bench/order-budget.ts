// What one order costs PostgreSQL, counted by the server itself: transactions (pg_stat_database's
// xact_commit + xact_rollback of the service's database), statements (pg_stat_statements calls, by
// statement) and the plans the server made (pg_stat_statements plans, track_planning) over a run of real
// orders, one web and one worker, divided by the orders. The server is a private one with fsync and
// synchronous_commit on, as operators run it (or DATABASE_URL's server, which must preload pg_stat_statements,
// with pg_stat_statements.track_planning on for the plans). Writes the "Order budget on PostgreSQL" section of
// BENCHMARKS.md.
//   node --import tsx scripts/bench/order-budget.ts [--orders 1000] [--label now] [--top 12] [--write]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { printSection } from './benchmarks-file.js';
import { postAsyncOrder, prepareBuyer, timed } from './buyer.js';
import { orderServiceEnv } from './stores.js';
import { running, stopProcess, waitFor, runBench, startWebAndWorkers } from './processes.js';
import { startPrivatePostgres, type RunningPostgres } from '../postgres.js';
import { ensureRedis, freePort } from '../redis.js';
import { benchArgs } from './bench-args.js';

const values = benchArgs({
  orders: '1000',
  label: 'now',
  top: '12',
  write: false,
});
const ORDERS = Number(values.orders);
// How many of the statements that took the server longest are printed.
const TOP = Number(values.top);
const IN_FLIGHT = 32;
// Background work (relay, backpressure figure, clock) costs per second, not per order: measured over an idle
// window of this length and subtracted.
const IDLE_S = 10;
// A backend reports its transaction counts to pg_stat_database when it has been idle for up to 10 s (PostgreSQL
// 15): counts are read that long after the work they count.
const FLUSH_S = 11;
const sleep = (s: number) => new Promise((r) => setTimeout(r, s * 1000));

const say = (line: string) => process.stderr.write(`[bench-order-budget] ${line}\n`);
const perOrder = (n: number) => (n / ORDERS).toFixed(2);

interface Counts {
  xacts: number;
  /** Records and bytes the server wrote to its log (pg_stat_wal, the whole server: private to the run). */
  walRecords: number;
  walBytes: number;
  /** Statements the service sent (top level): its round trips to the server. */
  sent: number;
  /** Plans the server made (pg_stat_statements plans, top level and in functions): statements planned afresh. */
  planned: number;
  statements: Map<string, number>;
  /** Milliseconds the server spent executing each statement (total_exec_time), by statement. */
  times: Map<string, number>;
}

async function counts(client: pg.Client): Promise<Counts> {
  const xacts = await client.query<{ n: string }>(
    `SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()`,
  );
  const wal = await client.query<{ records: string; bytes: string }>(
    'SELECT wal_records AS records, wal_bytes AS bytes FROM pg_stat_wal',
  );
  const statements = await client.query<{
    query: string;
    calls: string;
    plans: string;
    toplevel: boolean;
    ms: number;
  }>(
    `SELECT query, calls, plans, toplevel, total_exec_time AS ms FROM pg_stat_statements s
       JOIN pg_database d ON d.oid = s.dbid
      WHERE d.datname = current_database()`,
  );
  const label = (r: { query: string; toplevel: boolean }) =>
    `${r.toplevel ? '' : '(in a function or trigger) '}${r.query}`;
  return {
    xacts: Number(xacts.rows[0]!.n),
    walRecords: Number(wal.rows[0]!.records),
    walBytes: Number(wal.rows[0]!.bytes),
    sent: statements.rows.filter((r) => r.toplevel).reduce((sum, r) => sum + Number(r.calls), 0),
    planned: statements.rows.reduce((sum, r) => sum + Number(r.plans), 0),
    statements: new Map(statements.rows.map((r) => [label(r), Number(r.calls)])),
    times: new Map(statements.rows.map((r) => [label(r), Number(r.ms)])),
  };
}

/** Per-second rates of background work, per-order figures of the run, by statement. */
function delta(before: Counts, after: Counts): Counts {
  const statements = new Map<string, number>();
  for (const [query, calls] of after.statements) {
    const n = calls - (before.statements.get(query) ?? 0);
    if (n > 0) statements.set(query, n);
  }
  const times = new Map<string, number>();
  for (const [query, ms] of after.times) times.set(query, ms - (before.times.get(query) ?? 0));
  return {
    xacts: after.xacts - before.xacts,
    walRecords: after.walRecords - before.walRecords,
    walBytes: after.walBytes - before.walBytes,
    sent: after.sent - before.sent,
    planned: after.planned - before.planned,
    statements,
    times,
  };
}

// This script's own poll, left out of every count. pg_stat_statements merges statements of the same shape
// (the service counts unsettled orders too): the `- 0` gives it a shape of its own.
const POLL_SQL = `SELECT count(*) - 0 AS n FROM orders WHERE phase <> 'settled'`;
const isPoll = (query: string) => query.includes('count(*) - $');

const short = (query: string) => query.replace(/\s+/g, ' ').trim().slice(0, 110);

async function main() {
  const redis = await ensureRedis();
  let server: RunningPostgres | undefined;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-budget-'));
  try {
    if (!process.env.DATABASE_URL) {
      server = await startPrivatePostgres({
        durable: true,
        settings: [
          'shared_preload_libraries=pg_stat_statements',
          'pg_stat_statements.track=all',
          'pg_stat_statements.track_planning=on',
        ],
      });
      process.env.DATABASE_URL = server.url;
    }
    const { store, buyer } = await prepareBuyer('postgres', 'bench_budget');
    const client = new pg.Client({ connectionString: (store.env as { DATABASE_URL: string }).DATABASE_URL });
    await client.connect();
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const env = orderServiceEnv(store, { redisUrl: redis.url, prefix: `budget${process.pid}`, port });
    const logFile = path.join(dir, 'service.log');
    await startWebAndWorkers(env, logFile, 1);

    await sleep(FLUSH_S);
    const idleStart = await counts(client);
    await sleep(IDLE_S);
    const idle = delta(idleStart, await counts(client));

    const before = await counts(client);
    const started = Date.now();
    await timed(ORDERS, IN_FLIGHT, () => postAsyncOrder(baseUrl, buyer));
    await waitFor(
      async () => Number((await client.query<{ n: string }>(POLL_SQL)).rows[0]!.n) === 0,
      'every order settled',
      600_000,
      100,
    );
    const seconds = (Date.now() - started) / 1000;
    await sleep(FLUSH_S);
    const measured = delta(before, await counts(client));
    const polls = [...measured.statements].filter(([q]) => isPoll(q)).reduce((sum, [, n]) => sum + n, 0);
    const run: Counts = {
      xacts: measured.xacts - polls,
      walRecords: measured.walRecords,
      walBytes: measured.walBytes,
      sent: measured.sent - polls,
      planned: measured.planned - polls,
      statements: new Map([...measured.statements].filter(([q]) => !isPoll(q))),
      times: measured.times,
    };
    // Where the server's time goes (printed, not written): the statements that took longest over the run.
    for (const [query, ms] of [...run.times].sort(([, a], [, b]) => b - a).slice(0, TOP))
      say(`${((1000 * ms) / ORDERS).toFixed(0).padStart(5)} µs per order executing \`${short(query)}\``);
    // Updates that added no index entry (HOT) among all, per table (the setup's few included).
    const hot = await client.query<{ relname: string; upd: string; hot: string }>(
      `SELECT relname, n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables
        WHERE relname IN ('orders', 'order_items', 'listings') ORDER BY relname`,
    );
    for (const r of hot.rows)
      say(`${r.relname}: ${perOrder(Number(r.upd))} updates per order, ${r.hot} of ${r.upd} HOT`);
    await Promise.all([...running].map(stopProcess));
    await client.end();
    await store.remove();

    // A count of the run less what background work adds at the idle window's rate over the run and the flush.
    const lessBackground = (counted: number, inIdle: number) =>
      perOrder(counted - (inIdle / IDLE_S) * (seconds + FLUSH_S));
    const lines = [
      `${ORDERS} real orders (Prefer: respond-async, ${IN_FLIGHT} in flight), one web and one worker, PostgreSQL with`,
      'fsync and synchronous_commit on; the server counts. Background work measured idle for',
      `${IDLE_S} s (${(idle.xacts / IDLE_S).toFixed(1)} transactions/s) and subtracted for the run's ${seconds.toFixed(1)} s`,
      `and the ${FLUSH_S} s after it that the server takes to report every count.`,
      '',
      `Command: \`node --import tsx scripts/bench/order-budget.ts --orders ${ORDERS} --label ${values.label}\``,
      '',
      `| ${values.label} | per order |`,
      '|---|---|',
      `| transactions (xact_commit + xact_rollback) | ${perOrder(run.xacts)} |`,
      `| transactions less background | ${lessBackground(run.xacts, idle.xacts)} |`,
      `| statements sent (round trips) less background | ${lessBackground(run.sent, idle.sent)} |`,
      `| statements planned (top level and in functions) less background | ${lessBackground(run.planned, idle.planned)} |`,
      `| log (WAL) records less background | ${lessBackground(run.walRecords, idle.walRecords)} |`,
      `| log (WAL) kB less background | ${lessBackground(run.walBytes / 1024, idle.walBytes / 1024)} |`,
      '',
      '| statement | calls per order |',
      '|---|---|',
      ...[...run.statements.entries()]
        .filter(([, calls]) => calls / ORDERS >= 0.05)
        .sort(([, a], [, b]) => b - a)
        .map(([query, calls]) => `| \`${short(query).replace(/\|/g, '\\|')}\` | ${perOrder(calls)} |`),
    ];
    const body = lines.join('\n');
    printSection(`Order budget on PostgreSQL (${values.label})`, body, values.write);
  } finally {
    await Promise.all([...running].map(stopProcess));
    await redis.stop();
    await server?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

runBench(main);
