// Order throughput on each store with 1, 2 and 4 worker processes, side by side in one run: a backlog accepted
// over HTTP while the queue is paused and drained by the workers alone, then orders posted over HTTP
// (Prefer: respond-async) while the workers run, until every one is final; CPU of each process from /proc;
// BullMQ's own rate for no-op jobs on the same Redis. Writes the "Orders end to end" section of BENCHMARKS.md.
//   node --import tsx scripts/bench-orders.ts [--orders 2000] [--stores sqlite,postgres] [--workers 1,2,4]
//     [--rounds 1] [--pooling direct,pgbouncer] [--durable] [--pgbench] [--latency-ms 0] [--concurrency N]
//     [--warmup 0] [--database-core N] [--no-write]
// --durable: PostgreSQL with fsync and synchronous_commit on; --pgbench: pgbench against the same server before
// and after the runs; --latency-ms: SANDBOX_PAYMENT_LATENCY_MS; --concurrency: WORKER_CONCURRENCY (the service's default
// unless given).
// --warmup N: N orders posted and settled end to end before the measured phases, so that every process runs
// code V8 has compiled already, as one that has been up for a while does (0: processes start cold, as before).
// --database-core N: the private PostgreSQL server (its backends too) on core N, everything else of the run (web,
// workers, Redis, this load generator, pgbench's client) on the other cores: the database on cores of its own, as
// on a host of its own. The SQLite runs then have those other cores only.
// --pooling: on PostgreSQL, each run once on a direct connection and once through a private PgBouncer in
// transaction mode (DATABASE_POOLING=transaction) in front of the same server, in the same round; the runs
// through PgBouncer are printed, not written (use --no-write).
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { loadConfig } from '../src/config.js';
import { ORDER_QUEUE } from '../src/queue/order.queue.js';
import type { Probe } from '../test/helpers/store.probe.js';
import { replaceSection } from './benchmarks-file.js';
import { postAsyncOrder, prepareBuyer, refusedBusy, timed, type Buyer } from './bench-buyer.js';
import {
  ANY_UNSETTLED,
  freshStore,
  parseStoreKinds,
  postgresServer,
  postgresServerPid,
  serviceEnv,
  stopPostgresServer,
  type BenchStore,
} from './bench-stores.js';
import {
  running,
  startEntry,
  stopAllOnInterrupt,
  stopProcess,
  waitFor,
  waitForWeb,
  waitForWorkers,
} from './bench-processes.js';
import { coresBesides, pinTree, placementOf } from './cpu-affinity.js';
import { LOAD_LISTINGS } from './load-mix.js';
import { machineBusySeconds, treeCpuSeconds } from './process-stats.js';
import { startPgBouncer, type RunningPgBouncer } from './pgbouncer.js';
import { runPgbench } from './pgbench.js';
import { ensureRedis, freePort, type RunningRedis } from './redis.js';
import { DEFAULT_CONCURRENCY, MACHINE, ordersSection, type Phase, type Run } from './bench-orders-report.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    orders: { type: 'string', default: '2000' },
    stores: { type: 'string', default: 'sqlite,postgres' },
    workers: { type: 'string', default: '1,2,4' },
    rounds: { type: 'string', default: '1' },
    pooling: { type: 'string', default: 'direct' },
    durable: { type: 'boolean', default: false },
    pgbench: { type: 'boolean', default: false },
    'latency-ms': { type: 'string', default: '0' },
    concurrency: { type: 'string' },
    warmup: { type: 'string', default: '0' },
    'database-core': { type: 'string' },
    'no-write': { type: 'boolean', default: false },
  },
});
// --durable: the private PostgreSQL server keeps fsync and synchronous_commit on, as operators run it.
if (values.durable) process.env.BENCH_POSTGRES_DURABLE = 'true';
const POOLINGS = values.pooling.split(',') as ('direct' | 'pgbouncer')[];
if (POOLINGS.some((p) => p !== 'direct' && p !== 'pgbouncer'))
  throw new Error(`--pooling: direct and/or pgbouncer, not ${values.pooling}`);
const ORDERS = Number(values.orders);
const STORES = parseStoreKinds(values.stores);
const WORKERS = values.workers.split(',').map(Number);
/** Every setup once per round, the rounds one after the other: a burst of load from elsewhere hits one round. */
const ROUNDS = Number(values.rounds);
const CONCURRENCY = Number(values.concurrency ?? DEFAULT_CONCURRENCY);
/** The sandbox processor's delay per authorisation (SANDBOX_PAYMENT_LATENCY_MS), as a remote processor's. */
const LATENCY_MS = values['latency-ms'];
const IN_FLIGHT = 32;
const WARMUP = Number(values.warmup);
const DATABASE_CORE = values['database-core'] === undefined ? undefined : Number(values['database-core']);
const LAST_SETTLED = 'SELECT max(status_changed_at) FROM order_items';

const say = (line: string) => process.stderr.write(`[bench-orders] ${line}\n`);

/** BullMQ alone: N empty jobs through one worker of the same concurrency, added in bulk. */
async function noopRate(url: string, n: number): Promise<number> {
  const connection = new Redis(url, { maxRetriesPerRequest: null });
  const prefix = `benchnoop${process.pid}`;
  const workerConnection = connection.duplicate();
  const queue = new Queue('noop', { connection, prefix });
  let done = 0;
  const finished = new Promise<void>((resolve) => {
    const worker = new Worker('noop', async () => undefined, {
      connection: workerConnection,
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
  workerConnection.disconnect();
  connection.disconnect();
  return rate;
}

/** Posts `n` orders with IN_FLIGHT at once; resolves with the orders accepted per second. */
async function postOrders(baseUrl: string, buyer: Buyer, n: number): Promise<number> {
  return n / (await timed(n, IN_FLIGHT, () => postAsyncOrder(baseUrl, buyer)));
}

/** CPU seconds so far of each process that matters, by name. */
type CpuReader = () => Record<string, number>;

/** CPU seconds of each process between two readings. */
function cpuSpent(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(after).map(([name, cpu]) => [name, cpu - (before[name] ?? 0)]));
}

/** CPU ms per order of each process of a phase, for the log: where an order's CPU goes. */
const perProcess = (phase: Phase): string =>
  Object.entries(phase.cpu)
    .filter(([name]) => name !== MACHINE)
    .map(([name, cpu]) => `${name} ${((1000 * cpu) / phase.orders).toFixed(2)}`)
    .join(', ');

/** Waits until no order is unsettled; the time of the last settlement (epoch ms). */
async function lastSettlement(probe: Probe): Promise<number> {
  // Every 100 ms: the rate is taken from the last settlement's own time, so the poll only bounds how long after
  // it the phase's CPU is read, and each poll is work for the store that the orders would be charged.
  await waitFor(async () => (await probe.scalar(ANY_UNSETTLED)) === 0, 'every order settled', 300_000, 100);
  return probe.scalar<number>(LAST_SETTLED);
}

interface RunContext {
  redis: RunningRedis;
  store: BenchStore;
  /** A PgBouncer in front of the store's server, to reach its database through. */
  bouncer?: RunningPgBouncer;
  workers: number;
  buyer: Buyer;
  dir: string;
}

/** One web and `workers` workers on a fresh store and queue: the backlog drain, then end to end. */
async function runOnce({
  redis,
  store,
  bouncer,
  workers,
  buyer,
  dir,
}: RunContext): Promise<Omit<Run, 'round'>> {
  const logFile = path.join(dir, 'service.log');
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const queuePrefix = `bench${process.pid}${store.kind}w${workers}`;
  const label = `${store.kind}${bouncer ? ' via PgBouncer' : ''}`;
  const database = 'DATABASE_URL' in store.env ? new URL(store.env.DATABASE_URL).pathname.slice(1) : '';
  const pooled: Record<string, string> = bouncer
    ? { DATABASE_URL: bouncer.databaseUrl(database), DATABASE_POOLING: 'transaction' }
    : {};
  const env = serviceEnv(store, {
    ...pooled,
    REDIS_URL: redis.url,
    QUEUE_PREFIX: queuePrefix,
    LOG_LEVEL: 'info',
    LOG_PRETTY: 'false',
    RATE_LIMIT_PER_S: '0',
    SANDBOX_PAYMENT_LATENCY_MS: LATENCY_MS,
    PORT: String(port),
    WORKER_CONCURRENCY: String(CONCURRENCY),
  });
  const children: Record<string, ChildProcess> = { web: startEntry('src/server.ts', env, logFile) };
  const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
  const queue = new Queue(ORDER_QUEUE, { connection, prefix: loadConfig(env).REDIS_PREFIX });
  const probe = store.probe();
  const postgresPid = store.kind === 'postgres' ? await postgresServerPid() : undefined;
  const readCpu: CpuReader = () => {
    const own = process.cpuUsage();
    const cpu: Record<string, number> = { 'load generator': (own.user + own.system) / 1e6 };
    for (const [name, child] of Object.entries(children)) cpu[name] = treeCpuSeconds(child.pid!);
    if (redis.process?.pid) cpu.redis = treeCpuSeconds(redis.process.pid);
    if (postgresPid) cpu.database = treeCpuSeconds(postgresPid);
    cpu[MACHINE] = machineBusySeconds();
    return cpu;
  };
  try {
    await waitForWeb(baseUrl, children.web!);
    const startWorkers = async () => {
      for (let i = 1; i <= workers; i++)
        children[`worker ${i}`] = startEntry('workers/order.worker.ts', env, logFile);
      await waitForWorkers(logFile, workers);
    };
    if (WARMUP > 0) {
      await startWorkers();
      await postOrders(baseUrl, buyer, WARMUP);
      await lastSettlement(probe);
      say(`${label}, ${workers} worker(s): ${WARMUP} orders to warm up, settled`);
    }
    await queue.pause();
    const idleAcceptRate = await postOrders(baseUrl, buyer, ORDERS);
    if (WARMUP === 0) await startWorkers();

    let before = readCpu();
    const resumed = Date.now();
    await queue.resume();
    const drainEnd = await lastSettlement(probe);
    const drain: Phase = {
      orders: ORDERS,
      rate: ORDERS / ((drainEnd - resumed) / 1000),
      acceptRate: idleAcceptRate,
      seconds: (Date.now() - resumed) / 1000,
      cpu: cpuSpent(before, readCpu()),
    };
    say(`${label}, ${workers} worker(s): backlog drained at ${drain.rate.toFixed(0)} orders/s`);
    say(`${label}, drain, CPU ms per order: ${perProcess(drain)}`);

    before = readCpu();
    const started = Date.now();
    const acceptRate = await postOrders(baseUrl, buyer, ORDERS);
    const end = await lastSettlement(probe);
    const endToEnd: Phase = {
      orders: ORDERS,
      rate: ORDERS / ((end - started) / 1000),
      acceptRate,
      seconds: (Date.now() - started) / 1000,
      cpu: cpuSpent(before, readCpu()),
    };
    say(`${label}, ${workers} worker(s): end to end at ${endToEnd.rate.toFixed(0)} orders/s`);
    say(`${label}, end to end, CPU ms per order: ${perProcess(endToEnd)}`);
    if (refusedBusy.count > 0) say(`${refusedBusy.count} answers of 5030 so far, each sent again`);
    const codes = await Promise.all(Object.values(children).map(stopProcess));
    return { store: store.kind, workers, drain, endToEnd, exitedCleanly: codes.every((code) => code === 0) };
  } finally {
    await Promise.all(Object.values(children).map(stopProcess));
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    connection.disconnect();
    await probe.close();
  }
}

async function versions(): Promise<string> {
  const found: string[] = [];
  for (const kind of STORES) {
    const store = await freshStore(kind, 'bench_orders');
    const probe = store.probe();
    const sql = kind === 'sqlite' ? 'SELECT sqlite_version()' : 'SHOW server_version';
    found.push(
      `${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'} ${String(await probe.scalar<string>(sql)).split(' ')[0]}`,
    );
    await probe.close();
    await store.remove();
  }
  return found.join(', ');
}

let bouncing: Promise<RunningPgBouncer> | undefined;
/** One PgBouncer in transaction mode in front of the PostgreSQL server, started on first use. */
const pgbouncer = async () =>
  (bouncing ??= postgresServer().then((server) => startPgBouncer(server.url, { maxClientConn: 200 })));

/**
 * --database-core: this process on the other cores before it starts anything (Redis, the service's processes and
 * pgbench's client inherit that; `placeDatabase` then moves the PostgreSQL server to its core).
 */
function placeRest(core: number): void {
  if (!STORES.includes('postgres')) throw new Error('--database-core: only with --stores postgres');
  pinTree(process.pid, coresBesides(core));
}

/** --database-core: the PostgreSQL server, started now, and its processes on their core. */
async function placeDatabase(core: number): Promise<void> {
  const pid = await postgresServerPid();
  if (!pid) throw new Error('--database-core: only with the private server (unset DATABASE_URL)');
  pinTree(pid, [core]);
  say(placementOf(core));
}

async function main() {
  if (DATABASE_CORE !== undefined) placeRest(DATABASE_CORE);
  const redis = await ensureRedis();
  const stopBouncer = async () => (bouncing ? (await bouncing).stop() : undefined);
  stopAllOnInterrupt(async () => {
    await redis.stop();
    await stopBouncer();
    await stopPostgresServer();
  });
  try {
    if (DATABASE_CORE !== undefined) await placeDatabase(DATABASE_CORE);
    const stores = await versions();
    const noop = await noopRate(redis.url, ORDERS * 5);
    // What the same server commits, before and after the service's runs (--pgbench).
    const pgbench = async (when: string) => {
      if (!values.pgbench || !STORES.includes('postgres')) return;
      const result = await runPgbench((await postgresServer()).url);
      say(
        `pgbench ${when}: ${result.tps.toFixed(0)} tps (TPC-B-like, -M prepared, ${result.clients} clients, ${result.seconds} s)`,
      );
    };
    await pgbench('before the runs');
    const runs: Run[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const kind of STORES) {
        for (const workers of WORKERS) {
          for (const pooling of kind === 'postgres' ? POOLINGS : ['direct']) {
            const { store, buyer } = await prepareBuyer(kind, 'bench_orders');
            const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-orders-'));
            const bouncer = pooling === 'pgbouncer' ? await pgbouncer() : undefined;
            try {
              const run = { round, ...(await runOnce({ redis, store, bouncer, workers, buyer, dir })) };
              if (!bouncer) runs.push(run);
            } finally {
              await store.remove();
              fs.rmSync(dir, { recursive: true, force: true });
            }
          }
        }
      }
    }
    await pgbench('after the runs');
    const body = ordersSection(
      {
        orders: ORDERS,
        stores: STORES,
        workers: WORKERS,
        rounds: ROUNDS,
        concurrency: CONCURRENCY,
        durable: values.durable,
        latencyMs: Number(LATENCY_MS),
        warmup: WARMUP,
        databaseCore: DATABASE_CORE,
        inFlight: IN_FLIGHT,
        listings: LOAD_LISTINGS.length,
        noop,
        noopJobs: ORDERS * 5,
        versions: stores,
      },
      runs,
    );
    process.stdout.write(`${body}\n`);
    if (!values['no-write']) replaceSection(path.join(ROOT, 'BENCHMARKS.md'), 'Orders end to end', body);
  } finally {
    await Promise.all([...running].map(stopProcess));
    await redis.stop();
    await stopBouncer();
    await stopPostgresServer();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
