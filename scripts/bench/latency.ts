// The wait a caller sees: real orders posted without `Prefer: respond-async`, each answered once its
// outcome is known, timed from the request sent to the answer read. The service runs as the Procfile runs it
// (web, worker, clock, compiled), on each store made durable (SQLite's commits flushed, PostgreSQL with fsync),
// one client posting 2-listing orders over 50 listings, first one order in flight, then 16; beside it the floor
// on this machine in the same run: one fdatasync of 4 KiB, one transaction of a single pgbench client, one
// Redis round trip, and BullMQ's own no-op job at each number in flight with a worker taking as many jobs at once
// as the service's (its wait and its Redis commands per job).
//   node --import tsx scripts/bench/latency.ts [--stores sqlite,postgres] [--orders 400] [--warmup 2000]
//     [--block 50] [--idle 5] [--checkout DIR] [--stages | --stages-only] [--json] [--write]
// Each row also gives the CPU time per order of the web, the worker and the whole machine, and the Redis commands
// per order (those run inside BullMQ's Lua scripts included), over that row; after the rows, the CPU the idle
// processes burn per second.
// --orders: orders timed per store and number in flight; --warmup: orders posted before each row, at its number
// in flight, and not timed, so that every process runs the code V8 has optimised for that shape: a lone order
// calls each function once, so V8 optimises them one by one over the first thousands of orders (after 100 at 16
// in flight, TurboFan took 12-17 % of the web's and the worker's CPU in the lone row and unoptimised code ~25 %,
// and 800 lone orders later it still optimised ~90 functions for the first time per 400 orders); --block: a row's
// timed orders are taken in blocks of this many (at 16 in flight each block keeps 16 in flight from its first
// timed order to its last, with untimed orders around them, counted in CPU and Redis commands per order); the
// table gives the range of the blocks' p50s, the run's own noise; --idle: seconds the idle processes are watched
// after the rows.
// --checkout DIR: before and after in one run, fairly: on each store both services run at once, the one from DIR
// (another checkout of the project, e.g. a `git worktree` of the commit before: its Procfile and its dist/, built
// there when stale; one without node_modules gets a link to this tree's) and this tree's, each on a fresh store
// and a private Redis of its own; each is warmed up before each row, then the row's blocks alternate A B B A A B
// B A …, so that the host's drift and the position in the run fall on both alike; CPU per order and Redis
// commands per order of a tree are over its own blocks. The bench itself (client, stores, floors) runs from this
// tree. Without it, this tree alone, on REDIS_URL's Redis when set.
// --stages: after the rows, a separate traced pass of lone orders per tree and store (--warmup, then --orders;
// OTLP JSON to a collector in this bench, scripts/bench/latency-stages.ts) gives the mean time of each stage of a lone
// order, from the web taking the request to its answer written; tracing adds CPU (~1.5 ms an order), so read
// the shares. --stages-only: that pass without the rows. --json: the results as JSON. --write: the table (and
// the stages) replace BENCHMARKS.md's "Latency of one order"; with this tree alone, as the file holds current
// figures only (a run with --checkout compares, and its figures belong in a commit message).
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { postSigned, prepareBuyer, type Buyer } from './buyer.js';
import { fiftyListings, redisCommandsSoFar, twoListingOrder } from './lone-orders.js';
import {
  buildCheckout,
  startProcfileProcess,
  stopProcess,
  waitForWeb,
  waitForWorkers,
  ROOT,
  runBench,
} from './processes.js';
import {
  parseStoreKinds,
  orderServiceEnv,
  type StoreKind,
  stopServersOnInterrupt,
  stopServers,
} from './stores.js';
import { startOtlpReceiver, type ReceivedSpan } from '../../test/helpers/otlp-receiver.js';
import { stagesOf, stagesTable, tracingEnv, type StageReport } from './latency-stages.js';
import {
  commitsMs,
  fdatasyncP50,
  pgbenchOneClientMs,
  redisRoundTripP50,
  type Floor,
} from './latency-floor.js';
import { machineBusySeconds, treeCpuSeconds } from '../../test/helpers/process-stats.js';
import { percentile } from './samples.js';
import { writeSection } from './benchmarks-file.js';
import { ensureRedis, freePort, startPrivateRedis, type RunningRedis } from '../redis.js';
import { noopFloor, ORDER_JOB_BYTES } from './noop-floor.js';
import { benchArgs } from './bench-args.js';

const values = benchArgs({
  stores: 'sqlite,postgres',
  orders: '400',
  warmup: '2000',
  block: '50',
  stages: false,
  'stages-only': false,
  idle: '5',
  checkout: undefined,
  json: false,
  write: false,
});
if (values.write && values.checkout) throw new Error('--write takes this tree alone: drop --checkout');
const STORES = parseStoreKinds(values.stores);
const ORDERS = Number(values.orders);
const WARMUP = Number(values.warmup);
const IDLE_S = Number(values.idle);
const BLOCK = Math.max(1, Number(values.block));
const STAGES_ONLY = values['stages-only'];
const STAGES = values.stages || STAGES_ONLY;
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
  return (await block(baseUrl, buyer, n, inFlight, false)).ms;
}

/**
 * `n` timed orders, `inFlight` at once; with `steady`, as a part of a longer run: each of the `inFlight` callers
 * first posts one order not timed, so that the timed ones arrive spread as they do at that load, not `inFlight` at
 * the same instant, and a caller that finds no timed order left keeps posting untimed ones until the last timed
 * one is answered, so that it too waits among `inFlight`. The wait of each timed order, and all orders posted.
 */
async function block(
  baseUrl: string,
  buyer: Buyer,
  n: number,
  inFlight: number,
  steady: boolean,
): Promise<{ ms: number[]; posted: number }> {
  const ms: number[] = [];
  let started = 0;
  let posted = 0;
  await Promise.all(
    Array.from({ length: steady ? inFlight : Math.min(inFlight, n) }, async () => {
      if (steady && inFlight > 1) {
        posted++;
        await postWaiting(baseUrl, buyer);
      }
      while (ms.length < n && (steady || started < n)) {
        posted++;
        if (started++ < n) ms.push(await postWaiting(baseUrl, buyer));
        else await postWaiting(baseUrl, buyer);
      }
    }),
  );
  return { ms, posted };
}

interface Waits {
  inFlight: number;
  orders: number;
  p50: number;
  p99: number;
  max: number;
  /** The p50 of each block of the row, in the order taken: the spread between them is the run's noise. */
  blockP50s: number[];
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

function summary(
  inFlight: number,
  ms: number[],
  blockP50s: number[],
  cpu: Waits['cpu'],
  redisCommands: number,
): Waits {
  return {
    inFlight,
    orders: ms.length,
    p50: percentile(ms, 50),
    p99: percentile(ms, 99),
    max: ms.length ? Math.max(...ms) : NaN,
    blockP50s,
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

/** A service of one tree, up on a fresh store and a Redis of its own, with its client. */
interface Service {
  name: string;
  root: string;
  baseUrl: string;
  buyer: Buyer;
  /** web, worker, clock */
  children: ChildProcess[];
  /** A client of the service's Redis, to count its commands. */
  redis: Redis;
  /** Stops the processes and removes the store and the Redis; says so when a process exited badly. */
  stop(): Promise<void>;
}

let runs = 0;

/**
 * The service of `tree` as the Procfile runs it, on a fresh store of `kind` and a Redis of its own (with
 * --checkout each tree gets a private one, so neither runs on the other's jobs; alone, REDIS_URL's when set).
 */
async function startService(
  kind: StoreKind,
  tree: { name: string; root: string },
  extraEnv: Record<string, string> = {},
): Promise<Service> {
  const redisServer = values.checkout ? await startPrivateRedis() : await ensureRedis();
  const { store, buyer } = await prepareBuyer(kind, 'bench_latency', LISTINGS, 'latency client');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-latency-'));
  const logFile = path.join(dir, 'service.log');
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const prefix = `latency${process.pid}${kind}${++runs}`;
  const env = orderServiceEnv(store, { redisUrl: redisServer.url, prefix, port }, extraEnv);
  const children = ['web', 'worker', 'clock'].map((name) =>
    startProcfileProcess(tree.root, name, env, logFile),
  );
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
  const stop = async () => {
    redis.disconnect();
    const codes = await Promise.all(children.map(stopProcess));
    if (codes.some((code) => code !== 0))
      say(`${kind}, ${tree.name}: a process exited with ${codes.join(', ')}; log ${logFile}`);
    else fs.rmSync(dir, { recursive: true, force: true });
    await redisServer.stop();
    await store.remove();
  };
  try {
    await waitForWeb(baseUrl, children[0]!);
    await waitForWorkers(logFile, 1);
  } catch (err) {
    await stop();
    throw err;
  }
  return { ...tree, baseUrl, buyer, children, redis, stop };
}

/** What a tree's timed blocks of one row add up to. */
interface Tally {
  ms: number[];
  /** Orders posted in the blocks, the untimed ones that kept the number in flight steady included. */
  posted: number;
  blockP50s: number[];
  /** CPU seconds of the web, the worker and the machine over the tree's own blocks. */
  cpu: Waits['cpu'];
  commands: number;
}

/** One block of `n` timed orders, `inFlight` at once, on `service`, added to `tally`. */
async function timedBlock(service: Service, inFlight: number, n: number, tally: Tally): Promise<void> {
  const [web, worker] = service.children;
  const commandsBefore = await redisCommandsSoFar(service.redis);
  const before = cpuNow(web!, worker!);
  const { ms, posted } = await block(service.baseUrl, service.buyer, n, inFlight, true);
  const after = cpuNow(web!, worker!);
  // Less the INFO that read the count before.
  tally.commands += (await redisCommandsSoFar(service.redis)) - commandsBefore - 1;
  for (const key of ['web', 'worker', 'machine'] as const) tally.cpu[key] += after[key] - before[key];
  tally.ms.push(...ms);
  tally.posted += posted;
  tally.blockP50s.push(percentile(ms, 50));
}

/**
 * Each tree's service up at once on `kind`; for each number in flight, each warmed up, then the timed orders taken
 * in blocks of BLOCK, the trees alternated A B B A A B …, so that the host's drift and the position in the run
 * fall on both alike.
 */
async function runStore(kind: StoreKind): Promise<Result[]> {
  const services: Service[] = [];
  try {
    for (const tree of SERVICES) services.push(await startService(kind, tree));
    const rows = services.map((): Waits[] => []);
    for (const inFlight of IN_FLIGHT) {
      if (WARMUP > 0) for (const s of services) await waits(s.baseUrl, s.buyer, WARMUP, inFlight);
      const tallies = services.map((): Tally => ({
        ms: [],
        posted: 0,
        blockP50s: [],
        cpu: { web: 0, worker: 0, machine: 0 },
        commands: 0,
      }));
      for (let block = 0, done = 0; done < ORDERS; block++, done += BLOCK) {
        const turn = block % 2 === 0 ? [...services.keys()] : [...services.keys()].reverse();
        for (const i of turn)
          await timedBlock(services[i]!, inFlight, Math.min(BLOCK, ORDERS - done), tallies[i]!);
      }
      tallies.forEach((tally, i) => {
        const perOrder = (seconds: number) => (seconds * 1000) / tally.posted;
        const cpu = {
          web: perOrder(tally.cpu.web),
          worker: perOrder(tally.cpu.worker),
          machine: perOrder(tally.cpu.machine),
        };
        const row = summary(inFlight, tally.ms, tally.blockP50s, cpu, tally.commands / tally.posted);
        say(
          `${kind}, ${services[i]!.name}, ${inFlight} in flight: p50 ${row.p50.toFixed(1)} ms, p99 ${row.p99.toFixed(1)} ms, max ${row.max.toFixed(1)} ms; block p50s ${row.blockP50s.map((n) => n.toFixed(1)).join(' ')}`,
        );
        rows[i]!.push(row);
      });
    }
    // A second for what the last row left (its flushes, its timers) to end first; the trees watched at once.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const idle = await Promise.all(services.map((s) => idleCpu(s.children, IDLE_S)));
    return services.map((s, i) => ({
      store: kind,
      service: s.name,
      root: s.root,
      waits: rows[i]!,
      idle: idle[i]!,
    }));
  } finally {
    for (const s of services) await s.stop();
  }
}

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
  const noopCommands = (inFlight: number) => {
    const noop = floor.noop?.find((n) => n.inFlight === inFlight);
    return noop ? ` (no-op job ${noop.redisCommands.toFixed(1)})` : '';
  };
  const lines = [
    `Real orders without respond-async, 2 listings over ${LISTINGS.length}, one client, ${ORDERS} timed per row` +
      ` (each after ${WARMUP} not timed, as many in flight) in blocks of ${BLOCK}` +
      (SERVICES.length > 1
        ? `, the trees' blocks alternated A B B A …, each tree on its own store and Redis, both up at once`
        : '') +
      (SERVICES.length > 1 ? `; before: ${values.checkout}` : '') +
      '.',
    '',
    '| store | service | in flight | p50 ms | p99 ms | max ms | p99 / p50 | block p50s ms: min–max | 3 commits ms | aim | CPU ms per order: web / worker / machine | Redis commands per order |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|',
  ];
  for (const { store, service, waits: rows } of results) {
    const commits = commitsMs(store, floor);
    for (const row of rows) {
      const aim =
        row.inFlight === 1
          ? `p50 ≤ ${ms(commits + 3)}, p99 ≤ 3× p50`
          : `p99 ≤ ${store === 'sqlite' ? 50 : 80}`;
      lines.push(
        `| ${store} | ${service} | ${row.inFlight} | ${ms(row.p50)} | ${ms(row.p99)} | ${ms(row.max)} | ${(row.p99 / row.p50).toFixed(1)} | ${ms(Math.min(...row.blockP50s))}–${ms(Math.max(...row.blockP50s))} | ${ms(commits)} | ${aim} | ${row.cpu.web.toFixed(2)} / ${row.cpu.worker.toFixed(2)} / ${row.cpu.machine.toFixed(2)} | ${row.redisCommands.toFixed(1)}${noopCommands(row.inFlight)} |`,
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
  if (floor.noop?.length)
    lines.push(
      '',
      `The queue alone: BullMQ's own no-op job (scripts/bench/noop-floor.ts) on the same machine after the rows, ` +
        `a ${ORDER_JOB_BYTES}-byte payload as an order's job, its worker (a process of its own) taking ${WORKER_CONCURRENCY} ` +
        `jobs at once as the service's does, each job timed from its add to its \`completed\` event seen, ` +
        `${WARMUP} first not counted: ` +
        floor.noop
          .map(
            (n) =>
              `${n.inFlight} in flight p50 ${n.p50Ms.toFixed(2)} ms, ${n.redisCommands.toFixed(1)} Redis commands per job`,
          )
          .join('; ') +
        ". The Redis commands column gives the no-op job's beside each row.",
    );
  if (answeredQueued > 0)
    lines.push(`${answeredQueued} orders answered still QUEUED (ORDER_WAIT_MS ran out).`);
  return lines.join('\n');
}

/** The jobs a worker process of the service takes at once: config.ts's default unless the bench's env sets it. */
const WORKER_CONCURRENCY = Number(process.env.WORKER_CONCURRENCY || 32);

/**
 * BullMQ's own no-op job on the run's Redis at each number in flight of the rows, its worker taking as many jobs at
 * once as the service's does (at one in flight it then looks for a second job after taking each, as the service's
 * worker does), warmed up and counted as the rows are: what the queue alone costs an order of the same shape.
 */
async function noopJobs(redis: RunningRedis): Promise<NonNullable<Floor['noop']>> {
  const rows: NonNullable<Floor['noop']> = [];
  for (const inFlight of IN_FLIGHT) {
    const floor = await noopFloor(redis.url, {
      jobs: ORDERS,
      inFlight,
      payloadBytes: ORDER_JOB_BYTES,
      workerConcurrency: WORKER_CONCURRENCY,
      warmup: WARMUP,
    });
    rows.push({ inFlight, p50Ms: floor.p50Ms, redisCommands: floor.redisCommands });
  }
  return rows;
}

/** A traced pass of lone orders on the service of `tree`: the spans of its timed orders. */
async function tracedPass(kind: StoreKind, tree: { name: string; root: string }): Promise<ReceivedSpan[]> {
  const receiver = await startOtlpReceiver();
  try {
    const service = await startService(kind, tree, tracingEnv(receiver.endpoint));
    try {
      if (WARMUP > 0) await waits(service.baseUrl, service.buyer, WARMUP, 1);
      // What the warm-up left in the exporters' buffers comes within their delay (100 ms); then it is dropped.
      await new Promise((resolve) => setTimeout(resolve, 500));
      receiver.spans.length = 0;
      await waits(service.baseUrl, service.buyer, ORDERS, 1);
    } finally {
      // Each process exports what it still holds as it stops.
      await service.stop();
    }
    return [...receiver.spans];
  } finally {
    await receiver.close();
  }
}

async function main() {
  const redis = await ensureRedis();
  stopServersOnInterrupt(redis);
  try {
    for (const { root } of SERVICES) await buildCheckout(root);
    const results: Result[] = [];
    const stages: StageReport[] = [];
    for (const store of STORES) {
      if (!STAGES_ONLY) results.push(...(await runStore(store)));
      if (STAGES)
        for (const tree of SERVICES)
          stages.push({ store, service: tree.name, ...stagesOf(await tracedPass(store, tree)) });
    }
    // The floor goes beside the rows; the stages alone need none.
    const floor: Floor | undefined = STAGES_ONLY
      ? undefined
      : {
          fdatasyncMs: fdatasyncP50(),
          ...(STORES.includes('postgres') ? { pgbenchMs: await pgbenchOneClientMs() } : {}),
          redisMs: await redisRoundTripP50(redis.url),
          noop: await noopJobs(redis),
        };
    if (values.json)
      process.stdout.write(
        `${JSON.stringify({ orders: ORDERS, warmup: WARMUP, block: BLOCK, answeredQueued, floor, results, stages }, null, 2)}\n`,
      );
    else {
      const parts = [
        ...(floor ? [table(results, floor)] : []),
        ...(STAGES ? [stagesTable(stages, ORDERS, WARMUP)] : []),
      ];
      process.stdout.write(`${parts.join('\n\n')}\n`);
      if (values.write)
        writeSection(
          'Latency of one order',
          [
            `Command: \`node --import tsx scripts/bench/latency.ts ${process.argv.slice(2).join(' ')}\``,
            ...parts,
          ].join('\n\n'),
        );
    }
  } finally {
    await stopServers(redis);
  }
}

runBench(main);
