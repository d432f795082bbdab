// What a retention pass costs a SQLite store with a million old events, and what it gives back:
//   npx tsx scripts/bench-retention.ts [--orders 100000] [--events 1000000] [--write]
// A fresh SQLite store: generate-orders.ts orders, then --events order events 31 to 60 days old (600-byte
// snapshots), half of them with a finished webhook delivery, and a tenth as many inside the window. The web runs
// (the Procfile's command, a private Redis) when the clock starts with a retention pass every second, its first
// pass doing the work (500 rows a batch, 100 ms between batches). Measured, before and during the pass: a write transaction
// of another connection every 20 ms (`BEGIN IMMEDIATE`, one row updated: what a web or worker write waits for the
// lock), and /readyz of the web (a read of the store); the pass's batches and its longest; the file's size.
// --write puts the table into the "## Retention (SQLite)" section of BENCHMARKS.md.
import crypto from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import type { RetentionCounts } from '../src/services/retention.js';
import { replaceSection } from './benchmarks-file.js';
import { sampleCells, sleep } from './bench-samples.js';
import { running, startEntry, stopAllOnInterrupt, stopProcess, waitForWeb } from './bench-processes.js';
import { freshStore, serviceEnv } from './bench-stores.js';
import { generateOrders } from './generate-orders.js';
import { freePort, startPrivateRedis } from './redis.js';

const { values } = parseArgs({
  options: {
    orders: { type: 'string', default: '100000' },
    events: { type: 'string', default: '1000000' },
    rounds: { type: 'string', default: '4' },
    write: { type: 'boolean', default: false },
  },
});
const ORDERS = Number(values.orders);
const EVENTS = Number(values.events);
const ROUNDS = Number(values.rounds);
const DAY = 86_400_000;

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

async function main(): Promise<void> {
  stopAllOnInterrupt();
  const store = await freshStore('sqlite', 'bench_retention');
  const dbPath = (store.env as { DB_PATH: string }).DB_PATH;
  say(`${ORDERS} orders`);
  const generated = await generateOrders(store, {
    orders: ORDERS,
    clients: 2000,
    vendors: 1000,
    listings: 50_000,
    seed: 1,
  });

  const now = Date.now();
  const db = new Database(dbPath);
  db.pragma('busy_timeout = 10000');
  const seed = db.transaction((from: number, to: number, oldest: number, span: number) => {
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       INSERT INTO order_events (event_id, type, client_id, order_id, sequence, created_at, snapshot)
       SELECT 'evt_bench_' || i, 'order.updated', o.client_id, o.order_id, 1000 + i, ? + (i * 7919) % ?, ?
         FROM n JOIN orders o ON o.order_id = 1 + i % ?`,
    ).run(from, to - 1, oldest, span, JSON.stringify({ padding: 'x'.repeat(580) }), ORDERS);
  });
  db.prepare(
    `INSERT INTO webhooks (client_id, url, secret_salt, created_at) VALUES (1, 'https://hooks.example.com/x', 'salt', ?)`,
  ).run(now);
  const webhookId = Number(db.prepare('SELECT max(webhook_id) FROM webhooks').pluck().get());
  say(`${EVENTS} old events, ${EVENTS / 10} recent`);
  for (let from = 0; from < EVENTS; from += 50_000)
    seed(from, Math.min(EVENTS, from + 50_000), now - 60 * DAY, 29 * DAY);
  seed(EVENTS, EVENTS + EVENTS / 10, now - 29 * DAY, 29 * DAY);
  // Half the events past `afterEventNo` get a delivery, delivered a second after the event.
  const deliver = (afterEventNo: number) =>
    db
      .prepare(
        `INSERT INTO webhook_deliveries (event_no, webhook_id, state, attempts, next_attempt_at, created_at, finished_at)
         SELECT event_no, ?, 'delivered', 1, 0, created_at, created_at + 1000 FROM order_events
          WHERE event_no > ? AND event_no % 2 = 0`,
      )
      .run(webhookId, afterEventNo);
  const lastEventNo = () => Number(db.prepare('SELECT max(event_no) FROM order_events').pluck().get());
  deliver(0);
  db.pragma('wal_checkpoint(TRUNCATE)');
  const size = () => {
    db.pragma('wal_checkpoint(TRUNCATE)');
    return fs.statSync(dbPath).size;
  };
  const sizeBefore = size();
  const deliveries = Number(db.prepare('SELECT count(*) FROM webhook_deliveries').pluck().get());
  say(`file ${mb(sizeBefore)}, ${deliveries} deliveries`);

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
    const update = db.prepare('UPDATE vendors SET name = name WHERE vendor_id = 1');
    const write = db.transaction(() => update.run());
    const timedWrite = async () => {
      const began = performance.now();
      write.immediate();
      return performance.now() - began;
    };
    const timedReady = async () => {
      const began = performance.now();
      const res = await fetch(`${base}/readyz`);
      await res.arrayBuffer();
      return performance.now() - began;
    };
    const idleFor = sleep(10_000);
    const [idleWrites, idleReady] = await Promise.all([
      sampleUntil(idleFor, 20, timedWrite),
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
    const began = performance.now();
    let clock = startClock(path.join(dir, 'clock-0.log'));
    const pass = firstPass(clock, path.join(dir, 'clock-0.log'));
    const [counts, busyWrites, busyReady] = await Promise.all([
      pass,
      sampleUntil(pass, 20, timedWrite),
      sampleUntil(pass, 20, timedReady),
    ]);
    const seconds = (performance.now() - began) / 1000;
    await stopProcess(clock);
    const sizeAfter = size();
    // Steady traffic: each round another tenth of the events ages out (half with deliveries; written with no clock
    // running, in one large transaction of this script's) and a clock's pass deletes it; the file's size each time.
    const steady: string[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const from = EVENTS * (1 + round);
      const after = lastEventNo();
      seed(from, from + EVENTS / 10, now - 60 * DAY, 29 * DAY);
      deliver(after);
      const grown = size();
      const log = path.join(dir, `clock-${round}.log`);
      clock = startClock(log);
      const counts = await firstPass(clock, log);
      await stopProcess(clock);
      steady.push(
        `| ${round} | ${(EVENTS / 10).toLocaleString('en')} | ${mb(grown)} | ${counts.events.toLocaleString('en')} | ` +
          `${counts.longestBatchMs.toFixed(1)} (${counts.longestBatch}) | ${mb(size())} |`,
      );
      say(steady.at(-1)!);
    }
    const left = Number(db.prepare('SELECT count(*) FROM order_events').pluck().get());
    say(`pass: ${JSON.stringify(counts)} in ${seconds.toFixed(1)} s; file ${mb(sizeAfter)}`);

    const cpus = os.cpus();
    const section = [
      `Command: \`npx tsx scripts/bench-retention.ts --orders ${ORDERS} --events ${EVENTS} --rounds ${ROUNDS} --write\``,
      '',
      `Store: SQLite, ${generated.orders.toLocaleString('en')} orders (generate-orders.ts), ` +
        `${EVENTS.toLocaleString('en')} order events 31 to 60 days old (600-byte snapshots), half with a delivered ` +
        `webhook delivery, and ${(EVENTS / 10).toLocaleString('en')} inside the 30-day window. ` +
        `Machine: ${cpus[0]?.model.trim()} (${cpus.length} cores), Node ${process.version}. The web runs (Procfile ` +
        'command, compiled) when the clock starts with `RETENTION_CRON` every second: its first pass does the work ' +
        "(500 rows a batch, 100 ms between batches). The seconds below include the clock's start.",
      '',
      `The pass deleted ${counts.deliveries.toLocaleString('en')} deliveries, ${counts.events.toLocaleString('en')} ` +
        `events in ${counts.batches.toLocaleString('en')} batches over ${seconds.toFixed(1)} s, longest batch ` +
        `**${counts.longestBatchMs.toFixed(1)} ms** (${counts.longestBatch}); ${left.toLocaleString('en')} events left (the window's). File: ` +
        `${mb(sizeBefore)} before, ${mb(sizeAfter)} after (${counts.pagesReclaimed.toLocaleString('en')} pages ` +
        'given back by `incremental_vacuum`).',
      '',
      '| measured (ms) | p50 | p99 | max | samples |',
      '|---|--:|--:|--:|--:|',
      row('a write transaction of another connection, no pass running', idleWrites),
      row('the same, while the pass runs', busyWrites),
      row('`GET /readyz` of the web, no pass running', idleReady),
      row('the same, while the pass runs', busyReady),
      '',
      'Then steady traffic: each round another tenth of the events ages out and the next pass deletes it.',
      '',
      '| round | events aged out | file before the pass | events deleted | longest batch ms | file after |',
      '|--:|--:|--:|--:|--:|--:|',
      ...steady,
    ].join('\n');
    process.stdout.write(`${section}\n`);
    if (values.write)
      replaceSection(path.resolve(import.meta.dirname, '../BENCHMARKS.md'), 'Retention (SQLite)', section);
  } finally {
    db.close();
    await stopProcess(web);
    await redis.stop();
    await store.remove();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    say(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  },
);
