// The load benchmark of BENCHMARKS.md: for 1, 2 and 4 worker processes, a fresh store and queue, the Procfile's
// web, workers and clock on a private Redis, scripts/bench/load-test.ts against them, then SIGTERM to every process
// (each must exit 0), then the same backlog drained by BullMQ alone on that Redis (noop-floor.ts `drainFloor`: jobs
// that only wait the payment latency, as many workers): the floor under the workers' scaling. The store is a fresh
// SQLite file or a fresh PostgreSQL database per run (--store; the default follows DATABASE_URL). Writes the
// `## Load` section of BENCHMARKS.md (`## Load (PostgreSQL)`).
//
//   node --import tsx scripts/bench/load.ts [--store sqlite|postgres] [--duration 20] [--workers 1,2,4]
//     [--latency-ms 0,50] [--web-check 2] [--rate N] [--write]
// --rate: the mix at N requests/s in all (an open loop below saturation, for the web's event-loop delay without
// a queue of requests in front of it) instead of as fast as the service answers.
import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config/config.js';
import { closeDeps, createDeps } from '../../src/container.js';
import { createLogger } from '../../src/logger.js';
import { addCard, createClient } from '../../src/services/client-keys.js';
import { placeOrder } from '../../src/services/orders/place-order.js';
import { printSection } from './benchmarks-file.js';
import {
  eventLoopP99Ms,
  running,
  RUNTIME,
  startEntry,
  stopAllOnInterrupt,
  stopProcess,
  waitFor,
  waitForWeb,
  waitForWorkers,
  runBench,
} from './processes.js';
import {
  ANY_UNSETTLED,
  defaultStoreKind,
  freshStore,
  parseStoreKinds,
  postgresServerPid,
  serviceEnv,
  stopPostgresServer,
  type BenchStore,
  type StoreKind,
} from './stores.js';
import { LOAD_LISTINGS, LOAD_VENDOR, orderJson } from './load-mix.js';
import { formatReport, mib, runLoad, type LoadReport } from './load-test.js';
import { treeCpuSeconds } from '../../test/helpers/process-stats.js';
import { freePort, startPrivateRedis } from '../redis.js';
import { benchArgs } from './bench-args.js';
import { drainFloor, ORDER_JOB_BYTES } from './noop-floor.js';

const CONNECTIONS = 20;
const OVER_LIMIT_RATE = 300;
const BACKLOG = 3000;

const say = (line: string) => process.stderr.write(`[bench] ${line}\n`);

interface Drain {
  orders: number;
  seconds: number;
  perSecond: number;
  /** CPU seconds of the service's processes and Redis per second of the drain: how many cores were busy. */
  coresBusy: number;
}

interface Setup {
  workers: number;
  latencyMs: number;
  /** WEB_CONCURRENCY: web processes sharing the port. */
  web: number;
}

interface Run extends Setup {
  drain: Drain;
  /** BullMQ's own drain of as many jobs that only wait the payment latency, by as many workers (one web only). */
  floorPerSecond?: number;
  report: LoadReport;
  /** The web's event-loop delay p99 over the mixed load (nodejs_eventloop_lag_p99_seconds), in ms. */
  eventLoopP99Ms: number;
  exitCodes: Record<string, number | null>;
}

/**
 * Worker throughput alone: BACKLOG orders accepted (through the service's own check and placeOrder) while the
 * queue is paused, then the queue resumed with every worker ready; timed from the resume to the last settlement.
 */
async function drainBacklog(
  store: BenchStore,
  env: NodeJS.ProcessEnv,
  startWorkers: () => Promise<void>,
): Promise<Drain> {
  // One client places the whole backlog while the queue is paused: its share of the backlog must not refuse it.
  const limit = String(10 * BACKLOG);
  const config = loadConfig({
    ...env,
    LOG_LEVEL: 'silent',
    MAX_UNSETTLED_ORDERS: limit,
    MAX_UNSETTLED_PER_CLIENT: limit,
  });
  const logger = createLogger(config, 'bench');
  const deps = await createDeps(config, logger, { role: 'bench' });
  const probe = store.probe();
  try {
    await deps.store.catalog.importCatalog([LOAD_VENDOR], LOAD_LISTINGS);
    const client = await createClient(deps.store.clients, 'backlog client', Date.now());
    const card = await addCard(deps.store.clients, client.clientId, false, Date.now());
    const buyer = { ...client, ccToken: card.token, orderIds: [] };
    await deps.queue.queue.pause();
    for (let i = 0; i < BACKLOG; i++) {
      const requestId = crypto.randomUUID();
      const placed = await placeOrder(
        { ...deps, orderWaitMs: 0 },
        {
          clientId: client.clientId,
          requestId,
          requestHash: requestId,
          body: JSON.parse(orderJson(buyer, false)) as Record<string, unknown>,
          respondAsync: true,
          log: logger,
        },
      );
      if (placed.kind === 'refused') throw new Error(placed.problems.map((p) => p.message).join('; '));
    }
    await startWorkers();
    const postgresPid = store.kind === 'postgres' ? await postgresServerPid() : undefined;
    const cpu = () =>
      [...running].reduce((n, child) => n + treeCpuSeconds(child.pid!), 0) +
      (postgresPid ? treeCpuSeconds(postgresPid) : 0);
    const cpuBefore = cpu();
    const resumed = Date.now();
    await deps.queue.queue.resume();
    await waitFor(async () => (await probe.scalar(ANY_UNSETTLED)) === 0, 'the backlog to drain', 300_000);
    const last = await probe.scalar<number>(
      'SELECT max(status_changed_at) FROM order_items WHERE client_id = ?',
      client.clientId,
    );
    const seconds = (last - resumed) / 1000;
    const coresBusy = Math.round(((cpu() - cpuBefore) / ((Date.now() - resumed) / 1000)) * 10) / 10;
    return { orders: BACKLOG, seconds, perSecond: Math.round(BACKLOG / seconds), coresBusy };
  } finally {
    await probe.close();
    await closeDeps(deps);
  }
}

async function benchOnce(kind: StoreKind, setup: Setup, durationS: number, ratePerS?: number): Promise<Run> {
  const { workers, latencyMs, web } = setup;
  const redis = await startPrivateRedis();
  const redisUrl = redis.url;
  const redisPid = redis.process!.pid!;
  running.add(redis.process!);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-load-'));
  const store = await freshStore(kind, 'bench_load');
  const port = await freePort();
  const metricsPort = await freePort();
  const logFile = path.join(dir, 'service.log');
  const env = serviceEnv(store, {
    METRICS_PORT: String(metricsPort),
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: `load${crypto.randomBytes(4).toString('hex')}`,
    PORT: String(port),
    LOG_LEVEL: 'info',
    LOG_PRETTY: 'false',
    SANDBOX_PAYMENT_LATENCY_MS: String(latencyMs),
    WEB_CONCURRENCY: String(web),
  });
  const children: Record<string, ChildProcess> = { web: startEntry('src/server.ts', env, logFile) };
  children.clock = startEntry('jobs/clock.ts', env, logFile);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForWeb(url, children.web!);
    say(
      `${kind}, ${web} web, ${workers} worker(s), payment latency ${latencyMs} ms: a backlog of ${BACKLOG} orders`,
    );
    const drain = await drainBacklog(store, env, async () => {
      for (let i = 1; i <= workers; i++)
        children[`worker ${i}`] = startEntry('workers/order.worker.ts', env, logFile);
      await waitForWorkers(logFile, workers);
    });
    say(`drained at ${drain.perSecond} orders/s; now ${durationS} s of mixed load`);
    const metricsUrl = `http://127.0.0.1:${metricsPort}`;
    await eventLoopP99Ms(metricsUrl); // a scrape resets the histogram: what the next one reads is the load's
    const report = await runLoad({
      url,
      store,
      durationS,
      connections: CONNECTIONS,
      overLimitRate: OVER_LIMIT_RATE,
      seedOrdersPerClient: 10,
      ratePerS,
      processes: [
        ...Object.entries(children).map(([name, child]) => ({ name, pid: child.pid! })),
        { name: 'redis-server', pid: redisPid },
      ],
    });
    const eventLoop = await eventLoopP99Ms(metricsUrl);
    const exitCodes: Record<string, number | null> = {};
    for (const [name, child] of Object.entries(children)) exitCodes[name] = await stopProcess(child);
    // The same drain by BullMQ alone, on this Redis with the service stopped: what the queue itself scales to here.
    const floorPerSecond =
      web === 1
        ? await drainFloor(redisUrl, {
            jobs: BACKLOG,
            workers,
            concurrency: loadConfig(env).WORKER_CONCURRENCY,
            jobMs: latencyMs,
            payloadBytes: ORDER_JOB_BYTES,
          })
        : undefined;
    return { ...setup, drain, floorPerSecond, report, eventLoopP99Ms: eventLoop, exitCodes };
  } finally {
    await Promise.all(Object.values(children).map(stopProcess));
    await redis.stop();
    await store.remove();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The peak RSS (VmHWM) of the run's web, clock and workers, in MiB, as `web / clock / w1, w2, …`. A web cluster's
 * figure is its primary's (the process started), not its forks'.
 */
function peakRss(report: LoadReport): string {
  const of = (named: (name: string) => boolean) =>
    report.processes
      .filter((p) => named(p.name))
      .map((p) => mib(p.peakRssBytes))
      .join(', ') || '-';
  return `${of((n) => n === 'web')} / ${of((n) => n === 'clock')} / ${of((n) => n.startsWith('worker '))}`;
}

function summary(runs: Run[]): string {
  const rows = runs.map((run) => {
    const { orders, kinds } = run.report;
    const p99 = (kind: string) => kinds.find((k) => k.kind === kind)?.p99 ?? '-';
    const all = kinds.reduce((n, k) => n + k.requests, 0);
    const unexpected = kinds.reduce((n, k) => n + k.unexpected + k.socketErrors, 0);
    const refused = kinds.reduce((n, k) => n + (k.statuses['429 4291'] ?? 0), 0);
    const first = runs.find((r) => r.latencyMs === run.latencyMs && r.workers === 1 && r.web === 1);
    const scale = (perSecond: number, base: number | undefined) =>
      base ? ` (×${(perSecond / base).toFixed(2)})` : '';
    const floor = run.floorPerSecond
      ? `${Math.round(run.floorPerSecond)}${scale(run.floorPerSecond, first?.floorPerSecond)} | ${(run.drain.perSecond / run.floorPerSecond).toFixed(2)}×`
      : '– | –';
    const clean = Object.values(run.exitCodes).every((code) => code === 0)
      ? 'yes'
      : JSON.stringify(run.exitCodes);
    return (
      `| ${run.latencyMs} | ${run.web} | ${run.workers} | ${run.drain.perSecond}${scale(run.drain.perSecond, first?.drain.perSecond)} | ${run.drain.coresBusy} | ${floor} | ${Math.round(all / run.report.durationS)} | ` +
      `${Math.round(orders.accepted / run.report.durationS)} | ${orders.peakBacklog} | ` +
      `${p99('dry-run')} / ${p99('order-async')} / ${p99('get')} / ${p99('search')} | ${run.eventLoopP99Ms} | ${refused} | ${unexpected} | ${peakRss(run.report)} | ${clean} |`
    );
  });
  return [
    '| payment latency ms | web | workers | backlog drain, orders/s | cores busy in drain | BullMQ alone, jobs/s | orders ÷ jobs | mixed load, requests/s | orders accepted/s | peak backlog | p99 ms dry run / order / get / search | web event-loop p99 ms (10 = no delay) | 4291 (deliberate) | unexpected answers | peak RSS MiB: web / clock / each worker | all exited 0 on SIGTERM |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

async function main() {
  const values = benchArgs({
    store: defaultStoreKind(),
    duration: '20',
    workers: '1,2,4',
    'latency-ms': '0,50',
    'web-check': '2',
    rate: undefined,
    write: false,
  });
  const ratePerS = values.rate ? Number(values.rate) : undefined;
  const list = (value: string) => value.split(',').map(Number);
  const setups: Setup[] = list(values['latency-ms']).flatMap((latencyMs) =>
    list(values.workers).map((workers) => ({ latencyMs, workers, web: 1 })),
  );
  // One more run to see whether a web cluster helps: the mixed load is bound by one web process's core.
  const webCheck = Number(values['web-check']);
  if (webCheck > 1) setups.push({ latencyMs: 0, workers: 2, web: webCheck });
  const durationS = Number(values.duration);
  const [kind] = parseStoreKinds(values.store) as [StoreKind];
  stopAllOnInterrupt(stopPostgresServer);
  const runs: Run[] = [];
  try {
    for (const setup of setups) runs.push(await benchOnce(kind, setup, durationS, ratePerS));
  } finally {
    await stopPostgresServer();
  }
  const command =
    `${RUNTIME === 'tsx' ? 'BENCH_RUNTIME=tsx ' : ''}node --import tsx scripts/bench/load.ts --store ${kind} --duration ${durationS} --workers ${values.workers} ` +
    `--latency-ms ${values['latency-ms']} --web-check ${values['web-check']}${ratePerS ? ` --rate ${ratePerS}` : ''}`;
  const body = [
    `Command: \`${command}\` (${os.cpus().length} cores, ${CONNECTIONS} connections, ` +
      `one access key each, plus one key at ${OVER_LIMIT_RATE} requests/s against RATE_LIMIT_PER_S=200, the deliberate 4291s).`,
    '',
    `Each run starts a fresh store (${kind === 'sqlite' ? 'a SQLite file' : 'a database on a private PostgreSQL server'}) and queue with the Procfile processes (web, N workers, clock; ${RUNTIME === 'tsx' ? 'from source through tsx' : 'compiled, the Procfile commands as written'}). **Backlog drain**: ` +
      `${BACKLOG} orders accepted while the queue is paused, then resumed with every worker ready; orders/s from the ` +
      'resume to the last settlement, the workers alone. **BullMQ alone**: the same drain by the queue itself, on the same Redis ' +
      "once the service has stopped (scripts/bench/noop-floor.ts `drainFloor`): as many jobs of an order job's size added while paused, as many " +
      "worker processes taking as many jobs at once as the service's (WORKER_CONCURRENCY), each job waiting the payment latency and " +
      "doing nothing else; jobs/s from the resume to the last `completed` event, and how the orders' drain compares. The floor under " +
      "the workers' scaling: what BullMQ reaches on this machine with nothing of an order in the job. **Mixed load**: 40 % dry runs, 20 % real orders with " +
      '`Prefer: respond-async`, 20 % gets, 20 % searches (each connection its own key with 10 orders of its own), ' +
      'every request signed afresh, for the stated time; the backlog then is what the workers had not settled yet. ' +
      (ratePerS
        ? `Here the mix is sent at ${ratePerS} requests/s in all (autocannon's overallRate, split by the shares), below what the service answers flat out, so that the web's event-loop delay is not a queue of requests. `
        : '') +
      'Payment latency is the sandbox processor delay (`SANDBOX_PAYMENT_LATENCY_MS`) that a real processor would add. ' +
      'Peak RSS is the kernel’s VmHWM of each process at the end of the run (aims: web ≤ 120 MiB, the clock and each worker ≤ 90 MiB; with 2 web processes the web’s is the cluster’s primary, its forks not read). Logs at info, as JSON lines to a file.',
    '',
    summary(runs),
  ].join('\n');
  // Each run's own report is printed, not written: the file keeps the table.
  for (const run of runs)
    say(
      `${run.web} web, ${run.workers} worker${run.workers > 1 ? 's' : ''}, payment latency ${run.latencyMs} ms:\n${formatReport(run.report)}`,
    );
  // Runs from source keep the sections of the figures before the compiled build.
  const title = `Load${kind === 'sqlite' ? '' : ' (PostgreSQL)'}${RUNTIME === 'tsx' ? '' : ', compiled'}`;
  printSection(title, body, values.write);
}

runBench(main);
