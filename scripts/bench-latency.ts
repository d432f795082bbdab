// The wait a caller sees (issue 45): real orders posted without `Prefer: respond-async`, each answered once its
// outcome is known, timed from the request sent to the answer read. The service runs as the Procfile runs it
// (web, worker, clock, compiled), on each store made durable (SQLite's commits flushed, PostgreSQL with fsync),
// one client posting 2-listing orders over 50 listings, first one order in flight, then 16; beside it the floor
// on this machine in the same run: one fdatasync of 4 KiB, one transaction of a single pgbench client, one
// Redis round trip.
//   node --import tsx scripts/bench-latency.ts [--stores sqlite,postgres] [--orders 400] [--warmup 2000]
//     [--idle 5] [--checkout DIR] [--json]
// Each row also gives the CPU time per order of the web, the worker and the whole machine, and the Redis commands
// per order (those run inside BullMQ's Lua scripts included), over that row; after the rows, the CPU the idle
// processes burn per second.
// --orders: orders timed per store and number in flight; --warmup: orders posted before each row, at its number
// in flight, and not timed, so that every process runs the code V8 has optimised for that shape: a lone order
// calls each function once, so V8 optimises them one by one over the first thousands of orders (after 100 at 16
// in flight, TurboFan took 12-17 % of the web's and the worker's CPU in the lone row and unoptimised code ~25 %,
// and 800 lone orders later it still optimised ~90 functions for the first time per 400 orders); --idle: seconds
// the idle processes are watched after the rows; --checkout DIR: before and after in one run: on each store the
// service runs first from DIR (another checkout of the project, e.g. a `git worktree` of the commit before: its
// Procfile and its dist/, built there when stale; one without node_modules gets a link to this tree's), then
// from this tree, while the bench itself (client, stores, floors) runs from this tree; --json: the results as JSON.
import { execFile, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { Redis } from 'ioredis';
import { addCard, createClient } from '../src/services/client-keys.js';
import { postSigned, type Buyer } from './bench-buyer.js';
import { fiftyListings, redisCommandsSoFar, twoListingOrder } from './lone-orders.js';
import {
  buildCheckout,
  running,
  startProcfileProcess,
  stopAllOnInterrupt,
  stopProcess,
  waitForWeb,
  waitForWorkers,
} from './bench-processes.js';
import {
  freshStore,
  parseStoreKinds,
  postgresServer,
  serviceEnv,
  stopPostgresServer,
  type StoreKind,
} from './bench-stores.js';
import { LOAD_VENDOR } from './load-mix.js';
import { createDatabase, dropDatabase, findPostgresBinDir } from './postgres.js';
import { machineBusySeconds, treeCpuSeconds } from './process-stats.js';
import { ensureRedis, freePort } from './redis.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    stores: { type: 'string', default: 'sqlite,postgres' },
    orders: { type: 'string', default: '400' },
    warmup: { type: 'string', default: '2000' },
    idle: { type: 'string', default: '5' },
    checkout: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const STORES = parseStoreKinds(values.stores);
const ORDERS = Number(values.orders);
const WARMUP = Number(values.warmup);
const IDLE_S = Number(values.idle);
const IN_FLIGHT = [1, 16];
/** Where the service's processes run from: --checkout's tree ('before'), then this one. */
const SERVICES: { name: string; root: string }[] = [
  ...(values.checkout ? [{ name: 'before', root: path.resolve(values.checkout) }] : []),
  { name: values.checkout ? 'after' : 'this tree', root: ROOT },
];
/** PostgreSQL as operators run it: fsync, synchronous_commit and full_page_writes on. */
process.env.BENCH_POSTGRES_DURABLE = 'true';

const say = (line: string) => process.stderr.write(`[bench-latency] ${line}\n`);

/** 50 listings of one vendor, stock enough for every run. */
const LISTINGS = fiftyListings(991_001, 'Latency title', '97811111111');

/** Orders answered before their outcome was known (items still QUEUED: ORDER_WAIT_MS ran out). */
let answeredQueued = 0;
const QUEUED = 1;

/** One synchronous order; the ms from sending it to its answer. Throws unless it is placed (2010). */
async function postWaiting(baseUrl: string, buyer: Buyer): Promise<number> {
  const body = twoListingOrder(LISTINGS, buyer);
  const started = performance.now();
  const res = await postSigned(baseUrl, buyer, '/v1/orders', body);
  const ms = performance.now() - started;
  if (res.status !== '2010') throw new Error(`order refused: ${res.status} ${JSON.stringify(res.body)}`);
  const { listings } = res.body as { listings: { orderItems: { status: number }[] }[] };
  if (listings.some((l) => l.orderItems.some((item) => item.status === QUEUED))) answeredQueued++;
  return ms;
}

/** `n` orders, `inFlight` at once; the wait of each. */
async function waits(baseUrl: string, buyer: Buyer, n: number, inFlight: number): Promise<number[]> {
  const found: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(inFlight, n) }, async () => {
      while (next++ < n) found.push(await postWaiting(baseUrl, buyer));
    }),
  );
  return found;
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

interface Waits {
  inFlight: number;
  orders: number;
  p50: number;
  p99: number;
  max: number;
  /** CPU ms per order (user + system, from /proc) over the row: the web, the worker, and the whole machine. */
  cpu: { web: number; worker: number; machine: number };
  /** Commands Redis ran per order over the row (INFO commandstats: calls from Lua scripts included). */
  redisCommands: number;
}

/** CPU ms per second of the web, the worker and the clock while no order comes. */
interface Idle {
  web: number;
  worker: number;
  clock: number;
}

/** CPU seconds so far of the web, the worker and the whole machine (Redis, the database and this bench included). */
function cpuNow(web: ChildProcess, worker: ChildProcess) {
  return {
    web: treeCpuSeconds(web.pid ?? 0),
    worker: treeCpuSeconds(worker.pid ?? 0),
    machine: machineBusySeconds(),
  };
}

function summary(inFlight: number, ms: number[], cpu: Waits['cpu'], redisCommands: number): Waits {
  const sorted = [...ms].sort((a, b) => a - b);
  return {
    inFlight,
    orders: ms.length,
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    max: sorted.at(-1) ?? NaN,
    cpu,
    redisCommands,
  };
}

/** CPU ms per second that the web, the worker and the clock burn over `seconds` with no order in flight. */
async function idleCpu(children: readonly ChildProcess[], seconds: number): Promise<Idle> {
  const cpu = () => children.map((child) => treeCpuSeconds(child.pid ?? 0));
  const before = cpu();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const [web, worker, clock] = cpu().map((after, i) => ((after - before[i]!) * 1000) / seconds);
  return { web: web!, worker: worker!, clock: clock! };
}

/** A fresh store with the 50 listings and one client with a card. */
async function prepare(kind: StoreKind) {
  const store = await freshStore(kind, 'bench_latency');
  const opened = await store.open('bench');
  try {
    await opened.catalog.importCatalog([LOAD_VENDOR], LISTINGS);
    const client = await createClient(opened.clients, 'latency client', Date.now());
    const card = await addCard(opened.clients, client.clientId, false, Date.now());
    const buyer: Buyer = { accessKey: client.accessKey, secretKey: client.secretKey, ccToken: card.token };
    return { store, buyer };
  } finally {
    await opened.close();
  }
}

/** The service of the tree at `root` on a fresh store of `kind`: warmed up, then each number in flight timed. */
let runs = 0;

async function runStore(
  kind: StoreKind,
  root: string,
  redisUrl: string,
): Promise<{ waits: Waits[]; idle: Idle }> {
  const { store, buyer } = await prepare(kind);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-latency-'));
  const logFile = path.join(dir, 'service.log');
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = serviceEnv(store, {
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: `latency${process.pid}${kind}${++runs}`,
    LOG_LEVEL: 'info',
    LOG_PRETTY: 'false',
    RATE_LIMIT_PER_S: '0',
    PORT: String(port),
  });
  const children = ['web', 'worker', 'clock'].map((name) => startProcfileProcess(root, name, env, logFile));
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  try {
    await waitForWeb(baseUrl, children[0]!);
    await waitForWorkers(logFile, 1);
    const found: Waits[] = [];
    for (const inFlight of IN_FLIGHT) {
      if (WARMUP > 0) await waits(baseUrl, buyer, WARMUP, inFlight);
      const commandsBefore = await redisCommandsSoFar(redis);
      const before = cpuNow(children[0]!, children[1]!);
      const ms = await waits(baseUrl, buyer, ORDERS, inFlight);
      const after = cpuNow(children[0]!, children[1]!);
      // Less the INFO that read the count before.
      const commands = (await redisCommandsSoFar(redis)) - commandsBefore - 1;
      const perOrder = (key: keyof Waits['cpu']) => ((after[key] - before[key]) * 1000) / ms.length;
      const cpu = { web: perOrder('web'), worker: perOrder('worker'), machine: perOrder('machine') };
      const result = summary(inFlight, ms, cpu, commands / ms.length);
      say(
        `${kind}, ${root}, ${inFlight} in flight: p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms, max ${result.max.toFixed(1)} ms`,
      );
      found.push(result);
    }
    // A second for what the last row left (its flushes, its timers) to end first.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const idle = await idleCpu(children, IDLE_S);
    const codes = await Promise.all(children.map(stopProcess));
    if (codes.some((code) => code !== 0))
      say(`${kind}: a process exited with ${codes.join(', ')}; log ${logFile}`);
    else fs.rmSync(dir, { recursive: true, force: true });
    return { waits: found, idle };
  } finally {
    redis.disconnect();
    await Promise.all(children.map(stopProcess));
    await store.remove();
  }
}

/** One write of 4 KiB and its fdatasync, `n` times, in the folder SQLite's files are made in; ms at p50. */
function fdatasyncP50(n = 200): number {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-latency-sync-'));
  const fd = fs.openSync(path.join(dir, 'sync'), 'w');
  const page = crypto.randomBytes(4096);
  const ms: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      fs.writeSync(fd, page, 0, page.length, (i % 16) * 4096);
      const started = performance.now();
      fs.fdatasyncSync(fd);
      ms.push(performance.now() - started);
    }
  } finally {
    fs.closeSync(fd);
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return quantile(
    ms.sort((a, b) => a - b),
    0.5,
  );
}

/** pgbench's TPC-B-like transaction from one client (-c 1 -j 1, prepared) on the durable server; average ms. */
async function pgbenchOneClientMs(seconds = 5): Promise<number> {
  const bin = findPostgresBinDir();
  if (!bin) throw new Error('pgbench: PostgreSQL is not installed');
  const serverUrl = (await postgresServer()).url;
  const name = `pgbench_latency_${process.pid}`;
  await dropDatabase(serverUrl, name);
  const url = await createDatabase(serverUrl, name);
  try {
    const run = promisify(execFile);
    const pgbench = path.join(bin, 'pgbench');
    await run(pgbench, ['-i', '-q', '-s', '1', url], { timeout: 120_000 });
    const { stdout } = await run(
      pgbench,
      ['-M', 'prepared', '-c', '1', '-j', '1', '-T', String(seconds), url],
      {
        timeout: (seconds + 60) * 1000,
      },
    );
    const latency = /latency average = ([\d.]+) ms/.exec(stdout)?.[1];
    if (!latency) throw new Error(`pgbench printed no latency:\n${stdout}`);
    return Number(latency);
  } finally {
    await dropDatabase(serverUrl, name);
  }
}

/** A PING's round trip to the run's Redis, `n` times one after the other; ms at p50. */
async function redisRoundTripP50(url: string, n = 500): Promise<number> {
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  try {
    await redis.ping();
    const ms: number[] = [];
    for (let i = 0; i < n; i++) {
      const started = performance.now();
      await redis.ping();
      ms.push(performance.now() - started);
    }
    return quantile(
      ms.sort((a, b) => a - b),
      0.5,
    );
  } finally {
    redis.disconnect();
  }
}

/** The commits one order needs (acceptance, reservation, settlement), as issue 45 counts them. */
const COMMITS = 3;

interface Floor {
  fdatasyncMs: number;
  pgbenchMs?: number;
  redisMs: number;
}

/** The durable commits of one order on `kind`: COMMITS fdatasyncs on SQLite, COMMITS pgbench transactions on PostgreSQL. */
const commitsMs = (kind: StoreKind, floor: Floor) =>
  COMMITS * (kind === 'sqlite' ? floor.fdatasyncMs : (floor.pgbenchMs ?? NaN));

/** One store's waits with the service of one tree. */
interface Result {
  store: StoreKind;
  service: string;
  root: string;
  waits: Waits[];
  idle: Idle;
}

function table(results: readonly Result[], floor: Floor): string {
  const ms = (n: number) => n.toFixed(1);
  const lines = [
    `Real orders without respond-async, 2 listings over ${LISTINGS.length}, one client, ${ORDERS} timed per row` +
      ` (each after ${WARMUP} not timed, as many in flight); ${SERVICES.map((s) => `${s.name}: ${s.root}`).join(', ')}.`,
    '',
    '| store | service | in flight | p50 ms | p99 ms | max ms | p99 / p50 | 3 commits ms | aim | CPU ms per order: web / worker / machine | Redis commands per order |',
    '|---|---|--:|--:|--:|--:|--:|--:|---|--:|--:|',
  ];
  for (const { store, service, waits: rows } of results) {
    const commits = commitsMs(store, floor);
    for (const row of rows) {
      const aim =
        row.inFlight === 1
          ? `p50 ≤ ${ms(commits + 3)}, p99 ≤ 3× p50`
          : `p99 ≤ ${store === 'sqlite' ? 50 : 80}`;
      lines.push(
        `| ${store} | ${service} | ${row.inFlight} | ${ms(row.p50)} | ${ms(row.p99)} | ${ms(row.max)} | ${(row.p99 / row.p50).toFixed(1)} | ${ms(commits)} | ${aim} | ${row.cpu.web.toFixed(2)} / ${row.cpu.worker.toFixed(2)} / ${row.cpu.machine.toFixed(2)} | ${row.redisCommands.toFixed(1)} |`,
      );
    }
  }
  lines.push(
    '',
    `Idle, after the rows (${IDLE_S} s, no order in flight), CPU ms per second of web / worker / clock: ` +
      results
        .map(
          ({ store, service, idle }) =>
            `${store} ${service} ${[idle.web, idle.worker, idle.clock].map((n) => n.toFixed(1)).join(' / ')}`,
        )
        .join('; ') +
      '.',
    '',
    `Floor: fdatasync of 4 KiB p50 ${floor.fdatasyncMs.toFixed(2)} ms` +
      (floor.pgbenchMs !== undefined
        ? `; pgbench -c 1 (TPC-B-like, prepared, fsync on) ${floor.pgbenchMs.toFixed(2)} ms per transaction`
        : '') +
      `; Redis round trip p50 ${floor.redisMs.toFixed(3)} ms. CPU from /proc at 100 ticks a second: the web and` +
      ` the worker with their children; "machine" is every busy core (Redis, the database and this bench too).`,
  );
  if (answeredQueued > 0)
    lines.push(`${answeredQueued} orders answered still QUEUED (ORDER_WAIT_MS ran out).`);
  return lines.join('\n');
}

async function main() {
  const redis = await ensureRedis();
  stopAllOnInterrupt(async () => {
    await redis.stop();
    await stopPostgresServer();
  });
  try {
    for (const { root } of SERVICES) await buildCheckout(root);
    const results: Result[] = [];
    for (const store of STORES)
      for (const { name, root } of SERVICES)
        results.push({ store, service: name, root, ...(await runStore(store, root, redis.url)) });
    const floor: Floor = {
      fdatasyncMs: fdatasyncP50(),
      ...(STORES.includes('postgres') ? { pgbenchMs: await pgbenchOneClientMs() } : {}),
      redisMs: await redisRoundTripP50(redis.url),
    };
    if (values.json)
      process.stdout.write(
        `${JSON.stringify({ orders: ORDERS, warmup: WARMUP, answeredQueued, floor, results }, null, 2)}\n`,
      );
    else process.stdout.write(`${table(results, floor)}\n`);
  } finally {
    await Promise.all([...running].map(stopProcess));
    await redis.stop();
    await stopPostgresServer();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
