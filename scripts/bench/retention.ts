// What a retention pass costs a store with a million old events, and what it gives back:
//   npx tsx scripts/bench/retention.ts [--store sqlite|postgres] [--orders 100000] [--events 1000000] [--rounds 3] [--write]
// A fresh store (SQLite: a file; PostgreSQL: a database on a private server with fsync on, as operators run it, or
// DATABASE_URL's): generate-orders.ts orders, then --events order events 31 to 60 days old (600-byte
// snapshots), half of them with a finished webhook delivery, and a tenth as many inside the window. SQLite: the file
// is first made an old one (auto_vacuum NONE) and the VACUUM that converts it at first start is timed. The web
// runs (the Procfile's command, a private Redis) when the clock starts with a retention pass every second, its
// first pass doing the work (batches of up to 500 rows, 100 ms between batches). Measured, before and during the
// pass: a write transaction of another connection every 20 ms (SQLite: `BEGIN IMMEDIATE`, one row updated: what a
// web or worker write waits for the lock; PostgreSQL: an event and its delivery inserted, what a worker writes),
// and /readyz of the web (a read of the store); the pass's batches and its longest; the file's or the tables' size;
// PostgreSQL: the dead rows and autovacuum runs of order_events and webhook_deliveries (pg_stat_user_tables).
// --write puts the table into the "## Retention (SQLite)" or "## Retention (PostgreSQL)" section of BENCHMARKS.md.
import crypto from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { RetentionCounts } from '../../src/services/retention.js';
import { incrementalVacuum } from '../../src/store/sqlite/sqlite.db.js';
import type { Probe } from '../../test/helpers/store.probe.js';
import { printSection } from './benchmarks-file.js';
import { sampleCells, sleep } from './samples.js';
import { running, startEntry, stopAllOnInterrupt, stopProcess, waitForWeb, runBench } from './processes.js';
import { freshStore, parseStoreKinds, serviceEnv, stopServers } from './stores.js';
import { BENCH_STORE_SHAPE, generateOrders } from './generate-orders.js';
import { freePort, startPrivateRedis } from '../redis.js';
import { benchArgs } from './bench-args.js';

const values = benchArgs({
  store: 'sqlite',
  orders: '100000',
  events: '1000000',
  rounds: '4',
  write: false,
});
const KIND = parseStoreKinds(values.store)[0]!;
const ORDERS = Number(values.orders);
const EVENTS = Number(values.events);
const ROUNDS = Number(values.rounds);
const DAY = 86_400_000;
const SNAPSHOT = JSON.stringify({ padding: 'x'.repeat(580) });

const say = (line: string) => process.stderr.write(`[bench-retention] ${line}\n`);
const row = (what: string, samples: number[]) => `| ${what} | ${sampleCells(samples)} |`;
const mb = (bytes: number) => `${(bytes / 1048576).toFixed(0)} MB`;

/** Samples `measure` every `everyMs` until `done` resolves. */
async function sampleUntil(done: Promise<unknown>, everyMs: number, measure: () => Promise<number>) {
  let finished = false;
  void done.finally(() => (finished = true));
  const samples: number[] = [];
  while (!finished) {
    samples.push(await measure());
    await sleep(everyMs);
  }
  return samples;
}

/** The raw SQL of one store kind the benchmark needs around the service's own processes. */
interface Side {
  /** Order events `from` to `to` (exclusive) of the script's numbering, created in [oldest, oldest + span). */
  seed(from: number, to: number, oldest: number, span: number): Promise<void>;
  /** Half the events numbered past `afterEventNo` get a delivery, delivered a second after the event. */
  deliver(afterEventNo: number): Promise<void>;
  lastEventNo(): Promise<number>;
  count(table: 'order_events' | 'webhook_deliveries'): Promise<number>;
  /** SQLite: the file (its WAL emptied); PostgreSQL: order_events and webhook_deliveries with their indexes. */
  size(): Promise<number>;
  /** Milliseconds of one write transaction of another connection. */
  timedWrite(): Promise<number>;
  close(): Promise<void>;
}

function sqliteSide(dbPath: string, now: number): Side & { webhookId: number; db: Database.Database } {
  const db = new Database(dbPath);
  db.pragma('busy_timeout = 10000');
  const seed = db.transaction((from: number, to: number, oldest: number, span: number) => {
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       INSERT INTO order_events (event_id, type, client_id, order_id, sequence, created_at, snapshot)
       SELECT 'evt_bench_' || i, 'order.updated', o.client_id, o.order_id, 1000 + i, ? + (i * 7919) % ?, ?
         FROM n JOIN orders o ON o.order_id = 1 + i % ?`,
    ).run(from, to - 1, oldest, span, SNAPSHOT, ORDERS);
  });
  db.prepare(
    `INSERT INTO webhooks (client_id, url, secret_salt, created_at) VALUES (1, 'https://hooks.example.com/x', 'salt', ?)`,
  ).run(now);
  const webhookId = Number(db.prepare('SELECT max(webhook_id) FROM webhooks').pluck().get());
  const update = db.prepare('UPDATE vendors SET name = name WHERE vendor_id = 1');
  const write = db.transaction(() => update.run());
  return {
    db,
    webhookId,
    async seed(from, to, oldest, span) {
      for (let at = from; at < to; at += 50_000) seed(at, Math.min(to, at + 50_000), oldest, span);
    },
    async deliver(afterEventNo) {
      db.prepare(
        `INSERT INTO webhook_deliveries (event_no, webhook_id, state, attempts, next_attempt_at, created_at, finished_at)
         SELECT event_no, ?, 'delivered', 1, 0, created_at, created_at + 1000 FROM order_events
          WHERE event_no > ? AND event_no % 2 = 0`,
      ).run(webhookId, afterEventNo);
    },
    lastEventNo: async () => Number(db.prepare('SELECT max(event_no) FROM order_events').pluck().get()),
    count: async (table) => Number(db.prepare(`SELECT count(*) FROM ${table}`).pluck().get()),
    async size() {
      db.pragma('wal_checkpoint(TRUNCATE)');
      return fs.statSync(dbPath).size;
    },
    async timedWrite() {
      const began = performance.now();
      write.immediate();
      return performance.now() - began;
    },
    async close() {
      db.close();
    },
  };
}

interface TableStats {
  relname: string;
  n_live_tup: number;
  n_dead_tup: number;
  autovacuum_count: number;
  last_autovacuum: Date | null;
}

function postgresSide(probe: Probe, now: number) {
  let webhookId = 0;
  let written = 0;
  const stats = async () =>
    Object.fromEntries(
      (
        await probe.all<TableStats>(
          `SELECT relname, n_live_tup, n_dead_tup, autovacuum_count, last_autovacuum FROM pg_stat_user_tables
            WHERE relname IN ('order_events', 'webhook_deliveries')`,
        )
      ).map((r) => [r.relname, r]),
    ) as Record<'order_events' | 'webhook_deliveries', TableStats>;
  const side: Side & { stats: typeof stats; init(): Promise<void>; analyze(): Promise<void> } = {
    async init() {
      webhookId = Number(
        await probe.scalar(
          `INSERT INTO webhooks (client_id, url, secret_salt, created_at)
           VALUES (1, 'https://hooks.example.com/x', 'salt', ?) RETURNING webhook_id`,
          now,
        ),
      );
    },
    stats,
    /** Statistics as autovacuum's ANALYZE keeps them on tables in use. */
    analyze: () => probe.exec('ANALYZE order_events; ANALYZE webhook_deliveries'),
    async seed(from, to, oldest, span) {
      for (let at = from; at < to; at += 50_000)
        await probe.all(
          `INSERT INTO order_events (event_id, type, client_id, order_id, sequence, created_at, snapshot)
           SELECT 'evt_bench_' || i, 'order.updated', o.client_id, o.order_id, 1000 + i, ?::bigint + (i * 7919) % ?::bigint, ?::jsonb
             FROM generate_series(?::bigint, ?::bigint) i JOIN orders o ON o.order_id = 1 + i % ?::bigint`,
          oldest,
          span,
          SNAPSHOT,
          at,
          Math.min(to, at + 50_000) - 1,
          ORDERS,
        );
    },
    async deliver(afterEventNo) {
      await probe.all(
        `INSERT INTO webhook_deliveries (event_no, webhook_id, state, attempts, next_attempt_at, created_at, finished_at)
         SELECT event_no, ?::bigint, 'delivered', 1, 0, created_at, created_at + 1000 FROM order_events
          WHERE event_no > ? AND event_no % 2 = 0`,
        webhookId,
        afterEventNo,
      );
    },
    lastEventNo: async () => Number(await probe.scalar('SELECT max(event_no) FROM order_events')),
    count: async (table) => Number(await probe.scalar(`SELECT count(*) FROM ${table}`)),
    size: async () =>
      Number(
        await probe.scalar(
          `SELECT pg_total_relation_size('order_events') + pg_total_relation_size('webhook_deliveries')`,
        ),
      ),
    async timedWrite() {
      const n = ++written;
      const began = performance.now();
      await probe.all(
        `WITH e AS (
           INSERT INTO order_events (event_id, type, client_id, order_id, sequence, created_at, snapshot)
           SELECT 'evt_probe_' || ?::bigint, 'order.updated', client_id, order_id, 100000000 + ?::int, ?::bigint, '{}'
             FROM orders WHERE order_id = 1
           RETURNING event_no, created_at)
         INSERT INTO webhook_deliveries (event_no, webhook_id, state, attempts, next_attempt_at, created_at, finished_at)
         SELECT event_no, ?::bigint, 'delivered', 1, 0, created_at, created_at + 1 FROM e`,
        n,
        n,
        Date.now(),
        webhookId,
      );
      return performance.now() - began;
    },
    close: () => probe.close(),
  };
  return side;
}

/** One table's autovacuum figures, e.g. `order_events 1,000 dead of 99,000 (autovacuum 2×, last 01:02:03)`. */
const statsCell = (s: TableStats | undefined) =>
  s
    ? `${s.n_dead_tup.toLocaleString('en')} dead / ${s.n_live_tup.toLocaleString('en')} live, autovacuum ${s.autovacuum_count}×` +
      (s.last_autovacuum ? ` (last ${new Date(s.last_autovacuum).toISOString().slice(11, 19)} UTC)` : '')
    : 'n/a';

/** The longest batch of each step, e.g. `deliveries 41.2 ms, events 87.0 ms, cursors 0.0 ms, reclaim 12.3 ms`. */
const byStep = (pass: RetentionCounts) =>
  Object.entries(pass.longestBatchMsByStep)
    .map(([step, ms]) => `${step} ${ms.toFixed(1)} ms`)
    .join(', ');

async function main(): Promise<void> {
  stopAllOnInterrupt();
  // PostgreSQL as operators run it: fsync, synchronous_commit and full_page_writes on.
  process.env.BENCH_POSTGRES_DURABLE ??= 'true';
  const store = await freshStore(KIND, 'bench_retention');
  say(`${KIND}: ${ORDERS} orders`);
  const generated = await generateOrders(store, { orders: ORDERS, ...BENCH_STORE_SHAPE });

  const now = Date.now();
  const sqlite = KIND === 'sqlite' ? sqliteSide((store.env as { DB_PATH: string }).DB_PATH, now) : undefined;
  const postgres = KIND === 'postgres' ? postgresSide(store.probe(), now) : undefined;
  await postgres?.init();
  const side: Side = (sqlite ?? postgres)!;
  say(`${EVENTS} old events, ${EVENTS / 10} recent`);
  await side.seed(0, EVENTS, now - 60 * DAY, 29 * DAY);
  await side.seed(EVENTS, EVENTS + EVENTS / 10, now - 29 * DAY, 29 * DAY);
  await side.deliver(0);
  await postgres?.analyze();
  const sizeBefore = await side.size();
  const deliveries = await side.count('webhook_deliveries');
  say(`${mb(sizeBefore)}, ${deliveries} deliveries`);

  // SQLite: a file made before retention (auto_vacuum NONE), converted as the first start converts it.
  let vacuum: { seconds: number; bytes: number } | undefined;
  if (sqlite) {
    sqlite.db.pragma('auto_vacuum = NONE');
    sqlite.db.exec('VACUUM');
    const bytes = await side.size();
    const began = performance.now();
    incrementalVacuum(sqlite.db);
    vacuum = { seconds: (performance.now() - began) / 1000, bytes };
    say(`first-start VACUUM of a ${mb(bytes)} file: ${vacuum.seconds.toFixed(1)} s`);
  }

  const redis = await startPrivateRedis();
  running.add(redis.process!);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-bench-retention-'));
  const port = await freePort();
  const env = serviceEnv(store, {
    REDIS_URL: redis.url,
    QUEUE_PREFIX: `retention${crypto.randomBytes(4).toString('hex')}`,
    PORT: String(port),
    LOG_LEVEL: 'warn',
    LOG_PRETTY: 'false',
  });
  const web = startEntry('src/server.ts', env, path.join(dir, 'web.log'));
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitForWeb(base, web);
    const timedReady = async () => {
      const began = performance.now();
      const res = await fetch(`${base}/readyz`);
      await res.arrayBuffer();
      return performance.now() - began;
    };
    const idleFor = sleep(10_000);
    const [idleWrites, idleReady] = await Promise.all([
      sampleUntil(idleFor, 20, () => side.timedWrite()),
      sampleUntil(idleFor, 20, timedReady),
    ]);
    say('pruning');
    // The clock, as the Procfile runs it, with its pass every second: its first pass with work is logged.
    const startClock = (log: string) =>
      startEntry('jobs/clock.ts', { ...env, LOG_LEVEL: 'info', RETENTION_CRON: '* * * * * *' }, log);
    const firstPass = async (clock: ChildProcess, log: string) => {
      for (;;) {
        const line = fs
          .readFileSync(log, 'utf8')
          .split('\n')
          .find((text) => text.includes('"msg":"retention pass"'));
        if (line) return JSON.parse(line) as RetentionCounts;
        if (clock.exitCode !== null) throw new Error(`clock exited: ${fs.readFileSync(log, 'utf8')}`);
        await sleep(50);
      }
    };
    // PostgreSQL: autovacuum's work on the two tables, before, during (the most dead rows seen) and after.
    const statsBefore = await postgres?.stats();
    const mostDead = { order_events: 0, webhook_deliveries: 0 };
    const watchStats = async (done: Promise<unknown>) => {
      if (!postgres) return [];
      return sampleUntil(done, 2000, async () => {
        const now = await postgres.stats();
        for (const table of ['order_events', 'webhook_deliveries'] as const)
          mostDead[table] = Math.max(mostDead[table], now[table]?.n_dead_tup ?? 0);
        return 0;
      });
    };
    /** Waits (at most `seconds`) for autovacuum to have run on both tables since `since`; the seconds it took. */
    const autovacuumAfter = async (
      since: Awaited<ReturnType<NonNullable<typeof postgres>['stats']>>,
      seconds: number,
    ) => {
      const began = performance.now();
      while (performance.now() - began < seconds * 1000) {
        const now = await postgres!.stats();
        if (
          (['order_events', 'webhook_deliveries'] as const).every(
            (t) => (now[t]?.autovacuum_count ?? 0) > (since[t]?.autovacuum_count ?? 0),
          )
        )
          return (performance.now() - began) / 1000;
        await sleep(2000);
      }
      return undefined;
    };
    const began = performance.now();
    let clock = startClock(path.join(dir, 'clock-0.log'));
    const pass = firstPass(clock, path.join(dir, 'clock-0.log'));
    const [counts, busyWrites, busyReady] = await Promise.all([
      pass,
      sampleUntil(pass, 20, () => side.timedWrite()),
      sampleUntil(pass, 20, timedReady),
      watchStats(pass),
    ]);
    const seconds = (performance.now() - began) / 1000;
    await stopProcess(clock);
    const statsAtEnd = await postgres?.stats();
    const vacuumWait = postgres ? await autovacuumAfter(statsAtEnd!, 180) : undefined;
    const statsAfter = await postgres?.stats();
    const sizeAfter = await side.size();
    // Steady traffic: each round another tenth of the events ages out (half with deliveries; written with no clock
    // running, in large transactions of this script's) and a clock's pass deletes it; the size each time.
    const steady: string[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const from = EVENTS * (1 + round);
      const after = await side.lastEventNo();
      await side.seed(from, from + EVENTS / 10, now - 60 * DAY, 29 * DAY);
      await side.deliver(after);
      const grown = await side.size();
      const log = path.join(dir, `clock-${round}.log`);
      const roundStats = await postgres?.stats();
      clock = startClock(log);
      const counts = await firstPass(clock, log);
      await stopProcess(clock);
      // PostgreSQL: the space of the rows deleted is reused once autovacuum has been through (up to 2 minutes).
      const waited = postgres ? await autovacuumAfter(roundStats!, 120) : undefined;
      steady.push(
        `| ${round} | ${(EVENTS / 10).toLocaleString('en')} | ${mb(grown)} | ${counts.events.toLocaleString('en')} | ` +
          `${counts.longestBatchMs.toFixed(1)} (${counts.longestBatch}) | ${mb(await side.size())} |` +
          (postgres ? ` ${waited === undefined ? 'not within 120 s' : `${waited.toFixed(0)} s`} |` : ''),
      );
      say(`${steady.at(-1)!} longest by step: ${byStep(counts)}`);
    }
    const left = await side.count('order_events');
    say(`pass: ${JSON.stringify(counts)} in ${seconds.toFixed(1)} s; ${mb(sizeAfter)}`);

    const cpus = os.cpus();
    const what = sqlite ? 'File' : 'order_events and webhook_deliveries (`pg_total_relation_size`)';
    const section = [
      `Command: \`npx tsx scripts/bench/retention.ts --store ${KIND} --orders ${ORDERS} --events ${EVENTS} --rounds ${ROUNDS} --write\``,
      '',
      `Store: ${sqlite ? 'SQLite' : 'PostgreSQL (a private server, fsync, synchronous_commit and full_page_writes on; autovacuum at its defaults)'}, ` +
        `${generated.orders.toLocaleString('en')} orders (generate-orders.ts), ` +
        `${EVENTS.toLocaleString('en')} order events 31 to 60 days old (600-byte snapshots), half with a delivered ` +
        `webhook delivery, and ${(EVENTS / 10).toLocaleString('en')} inside the 30-day window. ` +
        `Machine: ${cpus[0]?.model.trim()} (${cpus.length} cores), Node ${process.version}. The web runs (Procfile ` +
        'command, compiled) when the clock starts with `RETENTION_CRON` every second: its first pass does the work ' +
        "(batches start at 63 rows and grow to 500 while quick, the reclaim's at 8 pages and grow to 64; 100 ms between batches). The seconds below include the clock's start.",
      '',
      ...(vacuum
        ? [
            `First start on an old file (auto_vacuum NONE, ${mb(vacuum.bytes)}): the VACUUM that converts it to ` +
              `auto_vacuum INCREMENTAL took **${vacuum.seconds.toFixed(1)} s**, holding the write lock meanwhile.`,
            '',
          ]
        : []),
      `The pass deleted ${counts.deliveries.toLocaleString('en')} deliveries, ${counts.events.toLocaleString('en')} ` +
        `events in ${counts.batches.toLocaleString('en')} batches over ${seconds.toFixed(1)} s, longest batch ` +
        `**${counts.longestBatchMs.toFixed(1)} ms** (${counts.longestBatch}; by step: ${byStep(counts)}); ${left.toLocaleString('en')} events left (the window's${postgres ? ', and those the measuring writer added' : ''}). ${what}: ` +
        `${mb(sizeBefore)} before, ${mb(sizeAfter)} after` +
        (sqlite
          ? ` (${counts.pagesReclaimed.toLocaleString('en')} pages given back by \`incremental_vacuum\`).`
          : ' (PostgreSQL keeps the space for new rows; it does not shrink the files).'),
      '',
      `| measured (ms) | p50 | p99 | max | samples |`,
      '|---|--:|--:|--:|--:|',
      row(
        `${sqlite ? 'a write transaction' : 'an event and its delivery inserted (one transaction)'} of another connection, no pass running`,
        idleWrites,
      ),
      row('the same, while the pass runs', busyWrites),
      row('`GET /readyz` of the web, no pass running', idleReady),
      row('the same, while the pass runs', busyReady),
      ...(postgres
        ? [
            '',
            'Autovacuum (`pg_stat_user_tables`; dead rows are those deleted and not yet vacuumed):',
            '',
            '| table | before the pass | most dead rows seen during it | at its end | after |',
            '|---|---|--:|---|---|',
            ...(['order_events', 'webhook_deliveries'] as const).map(
              (t) =>
                `| ${t} | ${statsCell(statsBefore?.[t])} | ${mostDead[t].toLocaleString('en')} | ${statsCell(statsAtEnd?.[t])} | ${statsCell(statsAfter?.[t])} |`,
            ),
            '',
            `After the pass had ended, autovacuum went through both tables again ${vacuumWait === undefined ? 'not within 180 s' : `${vacuumWait.toFixed(0)} s later`} ("after").`,
          ]
        : []),
      '',
      'Then steady traffic: each round another tenth of the events ages out and the next pass deletes it.',
      '',
      `| round | events aged out | ${sqlite ? 'file' : 'tables'} before the pass | events deleted | longest batch ms | ${sqlite ? 'file' : 'tables'} after |${postgres ? ' autovacuum on both after |' : ''}`,
      `|--:|--:|--:|--:|--:|--:|${postgres ? '--:|' : ''}`,
      ...steady,
    ].join('\n');
    printSection(`Retention (${sqlite ? 'SQLite' : 'PostgreSQL'})`, section, values.write);
  } finally {
    await side.close();
    await stopServers(redis, store);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

runBench(main, { exitWhenDone: true });
