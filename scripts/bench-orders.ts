// End-to-end order throughput: orders accepted over HTTP (Prefer: respond-async) until every one is final,
// with one and with two worker processes, beside BullMQ's own rate for no-op jobs on the same Redis in the
// same run. Writes the "Orders end to end" section of BENCHMARKS.md.
//   node --import tsx scripts/bench-orders.ts [orders]
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { sign } from '../src/auth/signature.js';
import { openDb } from '../src/store/db.js';
import { replaceSection } from './benchmarks-file.js';
import { seedDemo } from './demo-data.js';
import { ensureRedis, freePort } from './redis.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const ORDERS = Number(process.argv[2] ?? 1000);
const CONCURRENCY = 8;
const IN_FLIGHT = 32;

function start(entry: string, env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, entry)], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

const stop = (child: ChildProcess) => new Promise((resolve) => child.once('exit', resolve).kill('SIGTERM'));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** BullMQ alone: N empty jobs through one worker of the same concurrency, added in bulk. */
async function noopRate(url: string, n: number): Promise<number> {
  const connection = new Redis(url, { maxRetriesPerRequest: null });
  const prefix = `benchnoop${process.pid}`;
  const queue = new Queue('noop', { connection, prefix });
  let done = 0;
  const finished = new Promise<void>((resolve) => {
    const worker = new Worker('noop', async () => undefined, {
      connection: connection.duplicate(),
      prefix,
      concurrency: CONCURRENCY,
    });
    worker.on('completed', () => ++done === n && void worker.close().then(resolve));
  });
  const started = performance.now();
  await queue.addBulk(
    Array.from({ length: n }, (_, i) => ({ name: 'noop', data: { i }, opts: { removeOnComplete: true } })),
  );
  await finished;
  const rate = n / ((performance.now() - started) / 1000);
  await queue.obliterate({ force: true });
  await queue.close();
  connection.disconnect();
  return rate;
}

/** Posts `n` orders with at most IN_FLIGHT at once and waits until every order is settled in SQLite. */
async function orderRate(
  baseUrl: string,
  dbPath: string,
  creds: { accessKey: string; secretKey: string; ccToken: string },
  n: number,
  untilFinal: boolean,
) {
  const address = {
    name: 'Bench',
    address1: '1 Loop',
    city: 'Austin',
    provstate: 'TX',
    country: 'USA',
    zipcode: '78701',
    phone: '1',
  };
  const post = async () => {
    const body = JSON.stringify({
      shipAddr: address,
      billAddr: address,
      ccToken: creds.ccToken,
      listings: [{ listingId: 1001, quantity: 1 }],
      shippingMode: 'S',
      domain: 'bookmarket.com',
    });
    const requestId = crypto.randomUUID();
    const date = new Date().toISOString();
    const signature = sign(creds.secretKey, {
      method: 'POST',
      path: '/v1/orders',
      rawQuery: '',
      date,
      requestId,
      body,
    });
    const res = await fetch(`${baseUrl}/v1/orders`, {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        prefer: 'respond-async',
        'svc-requestid': requestId,
        'svc-access-key': creds.accessKey,
        'svc-date': date,
        'svc-signature': signature,
      },
    });
    if (res.headers.get('svc-status') !== '2010')
      throw new Error(`order refused: ${res.status} ${await res.text()}`);
  };
  const db = openDb(dbPath);
  const unsettled = db.prepare(`SELECT count(*) FROM orders WHERE phase <> 'settled'`).pluck();
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next++ < n) await post();
    }),
  );
  const accepted = performance.now();
  while (untilFinal && (unsettled.get() as number) > 0) await sleep(20);
  const finished = performance.now();
  db.close();
  return { acceptRate: n / ((accepted - started) / 1000), rate: n / ((finished - started) / 1000) };
}

/** Workers alone: `n` orders already accepted, then the workers start; rate from the first settled order to the last. */
async function drainRate(dbPath: string, n: number, startWorkers: () => ChildProcess[]) {
  const db = openDb(dbPath);
  const settled = db.prepare(`SELECT count(*) FROM orders WHERE phase = 'settled'`).pluck();
  const before = settled.get() as number;
  const workers = startWorkers();
  while ((settled.get() as number) === before) await sleep(5);
  const first = performance.now();
  while ((settled.get() as number) < before + n) await sleep(5);
  const rate = (n - 1) / ((performance.now() - first) / 1000);
  db.close();
  return { rate, workers };
}

async function run(workers: number, redisUrl: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-orders-'));
  const dbPath = path.join(dir, 'orders.db');
  const db = openDb(dbPath);
  const demo = seedDemo(db, path.join(dir, 'client.json'), '');
  db.prepare('UPDATE listings SET stock = 1000000').run();
  db.close();
  const port = await freePort();
  const env = {
    REDIS_URL: redisUrl,
    DB_PATH: dbPath,
    QUEUE_PREFIX: `bench${process.pid}w${workers}`,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_S: '0',
    PORT: String(port),
    WORKER_CONCURRENCY: String(CONCURRENCY),
  };
  const web = start('src/server.ts', env);
  const baseUrl = `http://127.0.0.1:${port}`;
  while (
    !(await fetch(`${baseUrl}/healthz`).then(
      (r) => r.ok,
      () => false,
    ))
  )
    await sleep(100);
  // First a backlog: orders accepted while no worker runs, drained by the workers alone.
  await orderRate(baseUrl, dbPath, demo, ORDERS, false);
  const drain = await drainRate(dbPath, ORDERS, () =>
    Array.from({ length: workers }, () => start('workers/order.worker.ts', env)),
  );
  // Then the whole path at once: accepted over HTTP while the workers run.
  const result = await orderRate(baseUrl, dbPath, demo, ORDERS, true);
  await Promise.all([web, ...drain.workers].map(stop));
  fs.rmSync(dir, { recursive: true, force: true });
  return { ...result, drainRate: drain.rate };
}

async function main() {
  const redis = await ensureRedis();
  const noop = await noopRate(redis.url, ORDERS * 5);
  const one = await run(1, redis.url);
  const two = await run(2, redis.url);
  await redis.stop();
  const section = [
    `Command: \`node --import tsx scripts/bench-orders.ts ${ORDERS}\` (${os.cpus().length} cores, ${new Date().toISOString().slice(0, 10)})`,
    '',
    `${ORDERS} real orders of one copy each, posted by ${IN_FLIGHT} concurrent signed clients with \`Prefer: respond-async\` to one web`,
    `process; end to end is timed from the first post until every order is settled in SQLite. Workers run ${CONCURRENCY} jobs at once.`,
    `BullMQ's own rate: ${ORDERS * 5} no-op jobs added in bulk, one worker of the same concurrency, same Redis, same run.`,
    '',
    '| run | backlog drained by the workers alone, orders/s (share of no-op) | accepted over HTTP while workers run, orders/s | accepted to final, orders/s (share of no-op) |',
    '|---|---|---|---|',
    `| 1 worker | ${one.drainRate.toFixed(0)} (${(one.drainRate / noop).toFixed(2)}) | ${one.acceptRate.toFixed(0)} | ${one.rate.toFixed(0)} (${(one.rate / noop).toFixed(2)}) |`,
    `| 2 workers | ${two.drainRate.toFixed(0)} (${(two.drainRate / noop).toFixed(2)}) | ${two.acceptRate.toFixed(0)} | ${two.rate.toFixed(0)} (${(two.rate / noop).toFixed(2)}) |`,
    `| BullMQ no-op jobs | ${noop.toFixed(0)} jobs/s (1.00) | | |`,
    '',
    `Two workers against one: **${(two.drainRate / one.drainRate).toFixed(2)}×** draining a backlog, **${(two.rate / one.rate).toFixed(2)}×** end to end.`,
    'End to end, the single web process, the workers, Redis and the load generator share two cores, so acceptance',
    'bounds the rate; the backlog drain shows what the workers themselves do (SQLite serialises their writes).',
  ].join('\n');
  replaceSection(path.join(ROOT, 'BENCHMARKS.md'), 'Orders end to end', section);
  process.stdout.write(`${section}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
