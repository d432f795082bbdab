// Instructions per lone order, load-independent: the CPU a synchronous real order (no
// `Prefer: respond-async`, 2 listings over 50, one in flight) costs the web or the worker, counted by valgrind's
// callgrind instead of timed. The service runs as the Procfile runs it (compiled), on a fresh durable store and
// a private Redis; the process measured (--process web|worker) runs under callgrind with instrumentation off,
// --warmup lone orders run first (V8 optimises the path), then instrumentation is switched on for --orders lone
// orders, then for 10 s with no order, whose rate per second is taken off (timers' work grows with the run's
// time, which callgrind and a busy machine stretch). Prints instructions per order of that process (its main
// thread, and all its threads) and the commands Redis ran per order (INFO commandstats, Lua scripts' calls
// included, all processes) over the same orders, less the idle rate likewise.
//   node --import tsx scripts/bench/order-instructions.ts [--process worker] [--store sqlite] [--orders 200]
//     [--warmup 600] [--checkout DIR] [--keep FILE]
// --checkout DIR: run the service from another checkout (e.g. a `git worktree` of the commit before; built there
// when stale, given this tree's node_modules when it has none); --keep FILE: keep callgrind's dump there (for
// callgrind_annotate). Needs valgrind; about a minute per run.
import { execFile, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { Redis } from 'ioredis';
import { postSigned, prepareBuyer, type Buyer } from './buyer.js';
import { fiftyListings, redisCommandsSoFar, twoListingOrder } from './lone-orders.js';
import {
  buildCheckout,
  startProcfileProcess,
  stopAllOnInterrupt,
  stopProcess,
  waitFor,
  waitForWorkers,
  ROOT,
} from './processes.js';
import { parseStoreKinds, serviceEnv, stopPostgresServer } from './stores.js';
import { callgrindTotal } from '../../test/helpers/process-stats.js';
import { ensureRedis, freePort } from '../redis.js';

const { values } = parseArgs({
  options: {
    process: { type: 'string', default: 'worker' },
    store: { type: 'string', default: 'sqlite' },
    orders: { type: 'string', default: '200' },
    warmup: { type: 'string', default: '600' },
    checkout: { type: 'string' },
    keep: { type: 'string' },
  },
});
const MEASURED = values.process;
if (MEASURED !== 'web' && MEASURED !== 'worker') throw new Error('--process: web or worker');
const [STORE] = parseStoreKinds(values.store);
const ORDERS = Number(values.orders);
const WARMUP = Number(values.warmup);
const SERVICE_ROOT = path.resolve(values.checkout ?? ROOT);
const IDLE_S = 10;
process.env.BENCH_POSTGRES_DURABLE = 'true';
const run = promisify(execFile);
const say = (line: string) => process.stderr.write(`[bench-order-instructions] ${line}\n`);

const LISTINGS = fiftyListings(992_001, 'Instructions title', '97822222222');

/** `n` synchronous orders one after another; throws on any not placed or answered before its outcome. */
async function loneOrders(baseUrl: string, buyer: Buyer, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await postSigned(baseUrl, buyer, '/v1/orders', twoListingOrder(LISTINGS, buyer));
    if (res.status !== '2010') throw new Error(`order refused: ${res.status} ${JSON.stringify(res.body)}`);
    const { listings } = res.body as { listings: { orderItems: { status: number }[] }[] };
    if (listings.some((l) => l.orderItems.some((item) => item.status === 1)))
      throw new Error(
        'an order was answered still QUEUED: the measured process is too slow for ORDER_WAIT_MS',
      );
  }
}

/** The measured process runs under callgrind, instrumentation off until callgrind_control turns it on. */
const callgrind = (outFile: string) => [
  'valgrind',
  '--tool=callgrind',
  '--instr-atstart=no',
  '--separate-threads=yes',
  `--callgrind-out-file=${outFile}`,
];

/**
 * Instructions (Ir) in callgrind's dump number `dump`: on the main thread (the JavaScript, the SQLite calls, the
 * I/O), and on all threads (V8's background compiler and GC helpers, libuv's pool and SQLite's flusher too).
 */
function instructionsIn(outFile: string, dump: number): { main: number; all: number } {
  const dir = path.dirname(outFile);
  const found = { main: 0, all: 0 };
  for (const name of fs.readdirSync(dir).filter((f) => f.startsWith(`${path.basename(outFile)}.${dump}-`))) {
    const n = callgrindTotal(path.join(dir, name));
    found.all += n;
    if (name.endsWith('-01')) found.main += n;
  }
  return found;
}

async function main() {
  await buildCheckout(SERVICE_ROOT);
  const redisServer = await ensureRedis();
  stopAllOnInterrupt(async () => {
    await redisServer.stop();
    await stopPostgresServer();
  });
  const { store, buyer } = await prepareBuyer(STORE!, 'bench_instructions', LISTINGS, 'instructions client');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-instructions-'));
  const logFile = path.join(dir, 'service.log');
  const outFile = path.join(dir, 'callgrind.out');
  const children: ChildProcess[] = [];
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
  try {
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const env = serviceEnv(store, {
      REDIS_URL: redisServer.url,
      QUEUE_PREFIX: `instructions${process.pid}`,
      LOG_LEVEL: 'info',
      LOG_PRETTY: 'false',
      RATE_LIMIT_PER_S: '0',
      PORT: String(port),
      // Under callgrind a process runs ~50 times slower: the web waits for the outcome long enough.
      ORDER_WAIT_MS: '60000',
    });
    for (const name of ['web', 'worker', 'clock'])
      children.push(
        startProcfileProcess(SERVICE_ROOT, name, env, logFile, name === MEASURED ? callgrind(outFile) : []),
      );
    const measured = children[MEASURED === 'web' ? 0 : 1]!;
    // Under callgrind a process takes tens of seconds to start.
    await waitFor(async () => (await fetch(`${baseUrl}/healthz`)).ok, 'the web', 300_000, 500);
    await waitForWorkers(logFile, 1, 300_000);
    say(`${WARMUP} lone orders of warm-up`);
    await loneOrders(baseUrl, buyer, WARMUP);
    const pid = String(measured.pid);
    await run('callgrind_control', ['-i', 'on', pid]);
    const commandsBefore = await redisCommandsSoFar(redis);
    const started = performance.now();
    await loneOrders(baseUrl, buyer, ORDERS);
    const seconds = (performance.now() - started) / 1000;
    const commands = (await redisCommandsSoFar(redis)) - commandsBefore - 1;
    await run('callgrind_control', ['-d', pid]);
    // What the processes do with no order (timers: stalled-job checks, heartbeats, the clock's jobs) grows with
    // the run's time, which callgrind and a busy machine stretch: counted over IDLE_S and taken off per second.
    const idleBefore = await redisCommandsSoFar(redis);
    const idleStarted = performance.now();
    await new Promise((resolve) => setTimeout(resolve, IDLE_S * 1000));
    const idleCommands = (await redisCommandsSoFar(redis)) - idleBefore - 1;
    await run('callgrind_control', ['-d', pid]);
    const idleSeconds = (performance.now() - idleStarted) / 1000;
    await run('callgrind_control', ['-i', 'off', pid]);
    const busy = instructionsIn(outFile, 1);
    const idle = instructionsIn(outFile, 2);
    if (values.keep) fs.copyFileSync(`${outFile}.1-01`, values.keep);
    const perOrder = (busyN: number, idleN: number) =>
      Math.round((busyN - (idleN * seconds) / idleSeconds) / ORDERS).toLocaleString('en');
    process.stdout.write(
      `${STORE} ${MEASURED} (${SERVICE_ROOT}): instructions per lone order ${perOrder(busy.main, idle.main)} on ` +
        `the main thread, ${perOrder(busy.all, idle.all)} on all threads; ` +
        `${((commands - (idleCommands * seconds) / idleSeconds) / ORDERS).toFixed(1)} Redis commands per order ` +
        `(${ORDERS} orders after ${WARMUP}, in ${seconds.toFixed(0)} s; idle per second taken off: ` +
        `${Math.round(idle.main / idleSeconds).toLocaleString('en')} instructions on the main thread, ` +
        `${(idleCommands / idleSeconds).toFixed(1)} commands)\n`,
    );
  } finally {
    redis.disconnect();
    await Promise.all(children.map(stopProcess));
    await store.remove();
    await redisServer.stop();
    await stopPostgresServer();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
