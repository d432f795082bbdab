// Order throughput on each store with 1, 2 and 4 worker processes, side by side in one run: a backlog accepted
// over HTTP while the queue is paused and drained by the workers alone, then orders posted over HTTP
// (Prefer: respond-async) while the workers run, until every one is final; CPU of each process from /proc;
// BullMQ's own rate for no-op jobs on the same Redis. Writes the "Orders end to end" section of BENCHMARKS.md.
//   node --import tsx scripts/bench/orders.ts [--orders 2000] [--stores sqlite,postgres] [--workers 1,2,4]
//     [--rounds 1] [--pooling direct,pgbouncer] [--durable] [--pgbench] [--latency-ms 0] [--concurrency N]
//     [--warmup 0] [--database-core N] [--write]
//   node --import tsx scripts/bench/orders.ts --shape callers [--orders 2000] [--stores sqlite,postgres]
//     [--start cold,warm] [--in-flight 64] [--warmup 1000] [--workers 1] [--rounds 1] [--bare-seconds 5]
//     [--database-core N] [--floor] [--write]
// --shape callers: the callers' shape instead of the backlog and end-to-end phases: one client with
// --in-flight orders at once (64), each one copy of each of the same 3 listings (bestsellers), posted with
// Prefer: respond-async until every one is final; processes started cold from the Procfile (measured from the
// first request) and warm (after --warmup orders of the same shape, 1000 unless given); durable commits on both
// stores (implies --durable and --pgbench); beside it, in the same run, a bare Express handler's requests/s for
// the same body (--bare-seconds per round, after a warm-up) and pgbench on the same server. Writes the
// "Orders, the callers' shape" section.
// --floor (with --shape callers): after each run, BullMQ's own no-op job on the same Redis at the same number in
// flight (noop-floor.ts), and the orders against it: orders/s ÷ jobs/s, CPU per order ÷ CPU per job of each side,
// Redis commands per order ÷ per job.
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
// through PgBouncer are printed, not written (run them without --write).
import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { loadConfig } from '../../src/config/config.js';
import { ORDER_QUEUE } from '../../src/queue/order.queue.js';
import type { Probe } from '../../test/helpers/store.probe.js';
import { printSection } from './benchmarks-file.js';
import autocannon from 'autocannon';
import {
  HOT_LISTINGS,
  hotOrder,
  postAsyncOrder,
  prepareBuyer,
  refusedBusy,
  timed,
  type Buyer,
} from './buyer.js';
import { signedHeaders } from '../../test/helpers/signed-client.js';
import { callersSection, msPerOrder, type CallersRun, type Start } from './callers-report.js';
import {
  ANY_UNSETTLED,
  freshStore,
  parseStoreKinds,
  postgresServer,
  postgresServerPid,
  orderServiceEnv,
  stopPostgresServer,
  type BenchStore,
} from './stores.js';
import {
  running,
  startEntry,
  stopAllOnInterrupt,
  stopProcess,
  waitFor,
  waitForWeb,
  waitForWorkers,
  runBench,
} from './processes.js';
import { coresBesides, pinTree, placementOf } from './cpu-affinity.js';
import { LOAD_LISTINGS } from './load-mix.js';
import { machineBusySeconds, treeCpuSeconds } from '../../test/helpers/process-stats.js';
import { startPgBouncer, type RunningPgBouncer } from '../pgbouncer.js';
import { runPgbench } from './pgbench.js';
import { ensureRedis, freePort, type RunningRedis } from '../redis.js';
import { DEFAULT_CONCURRENCY, MACHINE, ordersSection, type Phase, type Run } from './orders-report.js';
import { floorTable, noopFloor, type FloorRow } from './noop-floor.js';
import { redisCommandsSoFar } from './lone-orders.js';
import { benchArgs } from './bench-args.js';

const values = benchArgs({
  orders: '2000',
  stores: 'sqlite,postgres',
  shape: 'load',
  start: 'cold,warm',
  'in-flight': undefined,
  'bare-seconds': '5',
  workers: undefined,
  rounds: '1',
  pooling: 'direct',
  durable: false,
  pgbench: false,
  'latency-ms': '0',
  concurrency: undefined,
  warmup: undefined,
  'database-core': undefined,
  write: false,
  floor: false,
});
if (values.shape !== 'load' && values.shape !== 'callers')
  throw new Error(`--shape: load or callers, not ${values.shape}`);
/** The callers' shape rather than today's backlog and end-to-end phases. */
const CALLERS = values.shape === 'callers';
// --durable: the private PostgreSQL server keeps fsync and synchronous_commit on, as operators run it.
if (values.durable || CALLERS) process.env.BENCH_POSTGRES_DURABLE = 'true';
const STARTS = values.start.split(',') as Start[];
if (STARTS.some((s) => s !== 'cold' && s !== 'warm'))
  throw new Error(`--start: cold and/or warm, not ${values.start}`);
const BARE_SECONDS = Number(values['bare-seconds']);
const POOLINGS = values.pooling.split(',') as ('direct' | 'pgbouncer')[];
if (POOLINGS.some((p) => p !== 'direct' && p !== 'pgbouncer'))
  throw new Error(`--pooling: direct and/or pgbouncer, not ${values.pooling}`);
const ORDERS = Number(values.orders);
const STORES = parseStoreKinds(values.stores);
const WORKERS = (values.workers ?? (CALLERS ? '1' : '1,2,4')).split(',').map(Number);
/** Every setup once per round, the rounds one after the other: a burst of load from elsewhere hits one round. */
const ROUNDS = Number(values.rounds);
const CONCURRENCY = Number(values.concurrency ?? DEFAULT_CONCURRENCY);
/** The sandbox processor's delay per authorisation (SANDBOX_PAYMENT_LATENCY_MS), as a remote processor's. */
const LATENCY_MS = values['latency-ms'];
const IN_FLIGHT = Number(values['in-flight'] ?? (CALLERS ? 64 : 32));
const WARMUP = Number(values.warmup ?? (CALLERS ? 1000 : 0));
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

/** The service's processes of one run on a fresh store and queue, and what the run reads of them. */
interface Service {
  baseUrl: string;
  children: Record<string, ChildProcess>;
  queue: Queue;
  probe: Probe;
  readCpu: CpuReader;
  label: string;
  /** Starts the run's workers and resolves once each is ready. */
  startWorkers(): Promise<void>;
  /** Stops every process (SIGTERM); true when each exited 0. */
  stop(): Promise<boolean>;
  close(): Promise<void>;
}

/** Starts the web (the workers when asked) on the run's store with a queue of its own. */
async function startService({ redis, store, bouncer, workers, dir }: RunContext): Promise<Service> {
  const logFile = path.join(dir, 'service.log');
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const queuePrefix = `bench${process.pid}${store.kind}w${workers}`;
  const label = `${store.kind}${bouncer ? ' via PgBouncer' : ''}`;
  const database = 'DATABASE_URL' in store.env ? new URL(store.env.DATABASE_URL).pathname.slice(1) : '';
  const pooled: Record<string, string> = bouncer
    ? { DATABASE_URL: bouncer.databaseUrl(database), DATABASE_POOLING: 'transaction' }
    : {};
  const env = orderServiceEnv(
    store,
    { redisUrl: redis.url, prefix: queuePrefix, port },
    { ...pooled, SANDBOX_PAYMENT_LATENCY_MS: LATENCY_MS, WORKER_CONCURRENCY: String(CONCURRENCY) },
  );
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
  const stop = async () =>
    (await Promise.all(Object.values(children).map(stopProcess))).every((code) => code === 0);
  const service: Service = {
    baseUrl,
    children,
    queue,
    probe,
    readCpu,
    label,
    async startWorkers() {
      for (let i = 1; i <= workers; i++)
        children[`worker ${i}`] = startEntry('workers/order.worker.ts', env, logFile);
      await waitForWorkers(logFile, workers);
    },
    stop,
    async close() {
      await stop();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      connection.disconnect();
      await probe.close();
    },
  };
  try {
    await waitForWeb(baseUrl, children.web!);
  } catch (err) {
    await service.close();
    throw err;
  }
  return service;
}

/** One web and `workers` workers on a fresh store and queue: the backlog drain, then end to end. */
async function runOnce(context: RunContext): Promise<Omit<Run, 'round'>> {
  const { store, workers, buyer } = context;
  const service = await startService(context);
  const { baseUrl, queue, probe, readCpu, label, startWorkers } = service;
  try {
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
    const exitedCleanly = await service.stop();
    return { store: store.kind, workers, drain, endToEnd, exitedCleanly };
  } finally {
    await service.close();
  }
}

/** Posts `n` orders of the callers' shape, IN_FLIGHT at once; resolves with the wall seconds they took. */
const postHotOrders = (baseUrl: string, buyer: Buyer, n: number): Promise<number> =>
  timed(n, IN_FLIGHT, () => postAsyncOrder(baseUrl, buyer, hotOrder));

/**
 * The callers' shape on a fresh store and queue: the web and the workers started from the Procfile and ready,
 * then (warm: after WARMUP orders of the same shape, settled) ORDERS orders posted IN_FLIGHT at once until every
 * one is final.
 */
async function runCallers(context: RunContext, start: Start): Promise<Omit<CallersRun, 'round'>> {
  const { store, workers, buyer } = context;
  const service = await startService(context);
  const { baseUrl, probe, readCpu, label } = service;
  const counter = new Redis(context.redis.url);
  try {
    await service.startWorkers();
    if (start === 'warm') {
      await postHotOrders(baseUrl, buyer, WARMUP);
      await lastSettlement(probe);
    }
    const before = readCpu();
    const commandsBefore = await redisCommandsSoFar(counter);
    const started = Date.now();
    const acceptSeconds = await postHotOrders(baseUrl, buyer, ORDERS);
    const end = await lastSettlement(probe);
    // The INFO call that reads the count is itself one command.
    const redisCommands = ((await redisCommandsSoFar(counter)) - commandsBefore - 1) / ORDERS;
    const run = {
      redisCommands,
      store: store.kind,
      start,
      workers,
      orders: ORDERS,
      acceptRate: ORDERS / acceptSeconds,
      finalRate: ORDERS / ((end - started) / 1000),
      cpu: cpuSpent(before, readCpu()),
      seconds: (Date.now() - started) / 1000,
    };
    const ms = (pick: (name: string) => boolean) => msPerOrder(run, pick).toFixed(2);
    say(
      `${label} ${start}: accepted ${run.acceptRate.toFixed(0)}/s, final ${run.finalRate.toFixed(0)}/s; CPU ms per ` +
        `order: web ${ms((n) => n === 'web')}, workers ${ms((n) => n.startsWith('worker'))}, database ${ms((n) => n === 'database')}`,
    );
    if (refusedBusy.count > 0) say(`${refusedBusy.count} answers of 5030 so far, each sent again`);
    return { ...run, exitedCleanly: await service.stop() };
  } finally {
    counter.disconnect();
    await service.close();
  }
}

/**
 * The bare Express handler (scripts/bench/servers.ts) answering POSTs of the callers' order body, IN_FLIGHT
 * connections, measured by autocannon from this process after a warm-up: the reference of the first aim.
 */
async function bareRate(buyer: Buyer, dir: string): Promise<{ rps: number; cpuUsPerRequest: number }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/v1/orders`;
  const bare = startEntry(
    'scripts/bench/servers.ts',
    { ...process.env, PORT: String(port) },
    path.join(dir, 'bare.log'),
  );
  try {
    await waitFor(
      async () =>
        (await fetch(url, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }))
          .ok,
      'the bare server',
    );
    const body = JSON.stringify(hotOrder(buyer));
    const headers = signedHeaders(buyer, 'POST', '/v1/orders', body, crypto.randomUUID());
    const run = (duration: number) =>
      autocannon({ url, method: 'POST', headers, body, connections: IN_FLIGHT, duration });
    await run(2);
    const cpuBefore = treeCpuSeconds(bare.pid!);
    const result = await run(BARE_SECONDS);
    const cpu = treeCpuSeconds(bare.pid!) - cpuBefore;
    say(`bare Express: ${result.requests.average.toFixed(0)} requests/s`);
    return {
      rps: result.requests.average,
      cpuUsPerRequest: (cpu * 1e6) / Math.max(1, result.requests.total),
    };
  } finally {
    await stopProcess(bare);
  }
}

/** The callers' shape on every store and start, rounds alternating, with the references; the section. */
async function callers(redis: RunningRedis, stores: string): Promise<string> {
  const bare: { rps: number; cpuUsPerRequest: number }[] = [];
  const pgbench: number[] = [];
  const pgbenchOnce = async (when: string) => {
    if (!STORES.includes('postgres')) return;
    const result = await runPgbench((await postgresServer()).url);
    say(`pgbench ${when}: ${result.tps.toFixed(0)} tps`);
    pgbench.push(result.tps);
  };
  await pgbenchOnce('before the runs');
  const runs: CallersRun[] = [];
  const floors: FloorRow[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const kind of STORES) {
      for (const workers of WORKERS) {
        for (const start of STARTS) {
          const { store, buyer } = await prepareBuyer(kind, 'bench_callers');
          const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-callers-'));
          try {
            if (bare.length < round) bare.push(await bareRate(buyer, dir));
            const run = { round, ...(await runCallers({ redis, store, workers, buyer, dir }, start)) };
            runs.push(run);
            if (values.floor) floors.push(await floorBeside(redis, run));
          } finally {
            await store.remove();
            fs.rmSync(dir, { recursive: true, force: true });
          }
        }
      }
    }
  }
  await pgbenchOnce('after the runs');
  const command =
    `node --import tsx scripts/bench/orders.ts --shape callers --orders ${ORDERS} --stores ${STORES.join(',')} ` +
    `--start ${STARTS.join(',')} --in-flight ${IN_FLIGHT} --warmup ${WARMUP} --workers ${WORKERS.join(',')}` +
    `${ROUNDS > 1 ? ` --rounds ${ROUNDS}` : ''}${DATABASE_CORE !== undefined ? ` --database-core ${DATABASE_CORE}` : ''}`;
  const section = callersSection(
    {
      command: `${command}${values.floor ? ' --floor' : ''}`,
      stores: STORES,
      starts: STARTS,
      orders: ORDERS,
      warmup: WARMUP,
      inFlight: IN_FLIGHT,
      listings: HOT_LISTINGS.length,
      concurrency: CONCURRENCY,
      databaseCore: DATABASE_CORE,
      versions: stores,
      bare,
      pgbench,
    },
    runs,
  );
  return floors.length > 0 ? `${section}\n\n${floorTable(floors, IN_FLIGHT, FLOOR_PAYLOAD_BYTES)}` : section;
}

/** About the bytes of an order's job as the web adds it. */
const FLOOR_PAYLOAD_BYTES = 600;

/** BullMQ's no-op floor on the run's Redis, right after the run, at its number in flight. */
async function floorBeside(redis: RunningRedis, run: CallersRun): Promise<FloorRow> {
  const floor = await noopFloor(redis.url, {
    jobs: run.orders,
    inFlight: IN_FLIGHT,
    payloadBytes: FLOOR_PAYLOAD_BYTES,
    redisPid: redis.process?.pid,
  });
  const label = `${run.round} ${run.store} ${run.start}`;
  say(
    `${label}: floor ${floor.jobsPerSecond.toFixed(0)} no-op jobs/s, ${floor.redisCommands.toFixed(1)} Redis commands per job`,
  );
  return {
    label,
    ordersPerSecond: run.finalRate,
    cpuMs: {
      web: msPerOrder(run, (n) => n === 'web'),
      workers: msPerOrder(run, (n) => n.startsWith('worker')),
      redis: msPerOrder(run, (n) => n === 'redis'),
    },
    redisCommands: run.redisCommands,
    floor,
  };
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
    if (CALLERS) {
      const section = await callers(redis, stores);
      printSection("Orders, the callers' shape", section, values.write);
      return;
    }
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
    printSection('Orders end to end', body, values.write);
  } finally {
    await Promise.all([...running].map(stopProcess));
    await redis.stop();
    await stopBouncer();
    await stopPostgresServer();
  }
}

runBench(main);
