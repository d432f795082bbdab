// Instructions per lone order, load-independent: the CPU a synchronous real order (no
// `Prefer: respond-async`, 2 listings over 50, one in flight) costs the web or the worker, counted by valgrind's
// callgrind instead of timed. --request dry-run|get: the same for the hot paths of dry-run.ts instead, a signed
// dry run of one listing or a signed GET of one queued order, one in flight, in the web alone (no worker, no
// clock), or with --process bare in the bare Express handler of servers.ts that dry-run.ts compares it with.
// The service runs as the Procfile runs it (compiled), on a fresh durable store and
// a private Redis; the process measured (--process web|worker) runs under callgrind with instrumentation off,
// --warmup lone orders run first (V8 optimises the path), then instrumentation is switched on for --orders lone
// orders, then for 10 s with no order, whose rate per second is taken off (timers' work grows with the run's
// time, which callgrind and a busy machine stretch). Prints instructions per order of that process (its main
// thread, and all its threads) and the commands Redis ran per order (INFO commandstats, Lua scripts' calls
// included, all processes) over the same orders, less the idle rate likewise.
//   node --import tsx scripts/bench/order-instructions.ts [--process worker|web|bare] [--store sqlite]
//     [--request order|dry-run|get] [--orders 200] [--warmup 600 (2000 for a dry run or a get)] [--checkout DIR]
//     [--keep FILE]
// --orders and --warmup count the requests of --request's kind.
// --checkout DIR: run the service from another checkout (e.g. a `git worktree` of the commit before; built there
// when stale, given this tree's node_modules when it has none); --keep FILE: keep callgrind's dump there (for
// callgrind_annotate). Needs valgrind; about a minute per run.
import { execFile, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { Redis } from 'ioredis';
import { orderOf, postSigned, prepareBuyer, sendSigned, type Buyer } from './buyer.js';
import { fiftyListings, redisCommandsSoFar, twoListingOrder } from './lone-orders.js';
import {
  buildCheckout,
  entryArgs,
  running,
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
import { spawnTracked } from '../../test/helpers/child-processes.js';

const { values } = parseArgs({
  options: {
    process: { type: 'string', default: 'worker' },
    request: { type: 'string', default: 'order' },
    store: { type: 'string', default: 'sqlite' },
    orders: { type: 'string', default: '200' },
    warmup: { type: 'string' },
    checkout: { type: 'string' },
    keep: { type: 'string' },
  },
});
const MEASURED = values.process;
const REQUEST = values.request;
if (REQUEST !== 'order' && REQUEST !== 'dry-run' && REQUEST !== 'get')
  throw new Error('--request: order, dry-run or get');
if (MEASURED !== 'web' && MEASURED !== 'worker' && MEASURED !== 'bare')
  throw new Error('--process: web, worker or bare');
if ((MEASURED === 'bare') === (REQUEST === 'order') && MEASURED !== 'web')
  throw new Error('--process worker goes with --request order, bare with dry-run or get');
const [STORE] = parseStoreKinds(values.store);
const ORDERS = Number(values.orders);
// A dry run or a get is short: V8 optimises its path after more of them than it takes for an order.
const WARMUP = Number(values.warmup ?? (REQUEST === 'order' ? 600 : 2000));
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

/** `n` signed dry runs of one listing, or gets of the order `orderId`, one after another; throws on any refused. */
async function hotRequests(baseUrl: string, buyer: Buyer, n: number, orderId: number): Promise<void> {
  const dryRun = JSON.stringify({ ...orderOf(buyer, [LISTINGS[0]!.listingId]), dryrun: true });
  for (let i = 0; i < n; i++) {
    const res =
      REQUEST === 'get'
        ? await sendSigned(baseUrl, buyer, 'GET', `/v1/orders/${orderId}`, undefined)
        : await postSigned(baseUrl, buyer, '/v1/orders', dryRun);
    // The bare handler answers no Svc-Status.
    if (res.status !== null && res.status !== (REQUEST === 'get' ? '2000' : '2002'))
      throw new Error(`${REQUEST} refused: ${res.status} ${JSON.stringify(res.body)}`);
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
    let orderId = 0;
    if (MEASURED === 'bare') {
      const [command, ...args] = [
        ...callgrind(outFile),
        process.execPath,
        ...entryArgs('scripts/bench/servers.ts'),
      ];
      const log = fs.openSync(logFile, 'a');
      children.push(
        spawnTracked(running, command!, args, {
          cwd: ROOT,
          env: { ...process.env, PORT: String(port) },
          stdio: ['ignore', log, log],
        }),
      );
      fs.closeSync(log);
      await waitFor(async () => (await fetch(`${baseUrl}/v1/orders/1`)).ok, 'the bare server', 300_000, 500);
    } else {
      // A dry run or a get needs the web alone: no worker or clock, whose work is not the request's.
      for (const name of REQUEST === 'order' ? ['web', 'worker', 'clock'] : ['web'])
        children.push(
          startProcfileProcess(SERVICE_ROOT, name, env, logFile, name === MEASURED ? callgrind(outFile) : []),
        );
      // Under callgrind a process takes tens of seconds to start.
      await waitFor(async () => (await fetch(`${baseUrl}/healthz`)).ok, 'the web', 300_000, 500);
      if (REQUEST === 'order') await waitForWorkers(logFile, 1, 300_000);
    }
    const measured = children[MEASURED === 'worker' ? 1 : 0]!;
    if (REQUEST === 'get' && MEASURED === 'web') {
      // One real order, accepted and left queued (no worker runs), for the gets.
      const placed = await postSigned(baseUrl, buyer, '/v1/orders', twoListingOrder(LISTINGS, buyer), {
        prefer: 'respond-async',
      });
      if (placed.status !== '2010') throw new Error(`the order for the gets was refused: ${placed.status}`);
      orderId = (placed.body as { orderId: number }).orderId;
    }
    const send = (n: number) =>
      REQUEST === 'order' ? loneOrders(baseUrl, buyer, n) : hotRequests(baseUrl, buyer, n, orderId);
    say(`${WARMUP} requests (${REQUEST}) of warm-up`);
    await send(WARMUP);
    const pid = String(measured.pid);
    await run('callgrind_control', ['-i', 'on', pid]);
    const commandsBefore = await redisCommandsSoFar(redis);
    const started = performance.now();
    await send(ORDERS);
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
    const what = REQUEST === 'order' ? 'lone order' : REQUEST;
    process.stdout.write(
      `${STORE} ${MEASURED} (${MEASURED === 'bare' ? 'servers.ts' : SERVICE_ROOT}): instructions per ${what} ` +
        `${perOrder(busy.main, idle.main)} on the main thread, ${perOrder(busy.all, idle.all)} on all threads; ` +
        `${((commands - (idleCommands * seconds) / idleSeconds) / ORDERS).toFixed(1)} Redis commands per ${what} ` +
        `(${ORDERS} after ${WARMUP}, in ${seconds.toFixed(0)} s; idle per second taken off: ` +
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
