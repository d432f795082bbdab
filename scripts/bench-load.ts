// The load benchmark of BENCHMARKS.md: for 1, 2 and 4 worker processes, a fresh store and queue, the Procfile's
// web, workers and clock on a private Redis, scripts/load-test.ts against them, then SIGTERM to every process
// (each must exit 0). Writes the `## Load` section of BENCHMARKS.md.
//
//   node --import tsx scripts/bench-load.ts [--duration 20] [--workers 1,2,4] [--latency-ms 0,50] [--no-write]
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { closeDeps, createDeps } from '../src/container.js';
import { createLogger } from '../src/logger.js';
import { placeOrder } from '../src/services/place-order.js';
import { LOAD_LISTINGS, LOAD_VENDOR, orderJson } from './load-mix.js';
import { formatReport, runLoad, type LoadReport } from './load-test.js';
import { processStats } from './process-stats.js';
import { freePort, startPrivateRedis } from './redis.js';

const ROOT = path.resolve(import.meta.dirname, '..');
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
  report: LoadReport;
  exitCodes: Record<string, number | null>;
}

// Everything this script started, so that Ctrl-C stops it too.
const running = new Set<ChildProcess>();

function start(entry: string, env: Record<string, string>, logFile: string): ChildProcess {
  const log = fs.openSync(logFile, 'a');
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, entry)], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', log, log],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (
    !(await Promise.resolve()
      .then(check)
      .catch(() => false))
  ) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const stop = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.once('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });

/**
 * Worker throughput alone: BACKLOG orders accepted (through the service's own placeOrder) while the queue is
 * paused, then the queue resumed with every worker ready; timed from the resume to the last item's settlement.
 */
async function drainBacklog(env: Record<string, string>, startWorkers: () => Promise<void>): Promise<Drain> {
  const config = loadConfig({ ...env, LOG_LEVEL: 'silent' });
  const logger = createLogger(config, 'bench');
  const deps = createDeps(config, logger);
  try {
    deps.catalog.importCatalog([LOAD_VENDOR], LOAD_LISTINGS);
    const client = deps.clients.create('backlog client');
    const card = deps.clients.addCard(client.clientId, false);
    const buyer = { ...client, ccToken: card.token, orderIds: [] };
    await deps.queue.queue.pause();
    for (let i = 0; i < BACKLOG; i++) {
      const requestId = crypto.randomUUID();
      await placeOrder(
        { ...deps, orderWaitMs: 0 },
        {
          auth: { clientId: client.clientId, accessKey: client.accessKey, requestId },
          body: JSON.parse(orderJson(buyer, false)) as Record<string, unknown>,
          requestHash: requestId,
          respondAsync: true,
          log: logger,
        },
      );
    }
    await startWorkers();
    const cpu = () => [...running].reduce((n, child) => n + (processStats(child.pid!)?.cpuSeconds ?? 0), 0);
    const cpuBefore = cpu();
    const resumed = Date.now();
    await deps.queue.queue.resume();
    const unsettled = deps.db.prepare("SELECT count(*) FROM orders WHERE phase <> 'settled'").pluck();
    await waitFor(() => unsettled.get() === 0, 'the backlog to drain', 300_000);
    const last = deps.db
      .prepare('SELECT max(status_changed_at) FROM order_items WHERE client_id = ?')
      .pluck()
      .get(client.clientId) as number;
    const seconds = (last - resumed) / 1000;
    const coresBusy = Math.round(((cpu() - cpuBefore) / ((Date.now() - resumed) / 1000)) * 10) / 10;
    return { orders: BACKLOG, seconds, perSecond: Math.round(BACKLOG / seconds), coresBusy };
  } finally {
    await closeDeps(deps);
  }
}

async function benchOnce(setup: Setup, durationS: number): Promise<Run> {
  const { workers, latencyMs, web } = setup;
  const redis = await startPrivateRedis();
  const redisUrl = redis.url;
  const redisPid = redis.process!.pid!;
  running.add(redis.process!);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-load-'));
  const port = await freePort();
  const logFile = path.join(dir, 'service.log');
  const env = {
    REDIS_URL: redisUrl,
    DB_PATH: path.join(dir, 'orders.db'),
    QUEUE_PREFIX: `load${crypto.randomBytes(4).toString('hex')}`,
    PORT: String(port),
    LOG_LEVEL: 'info',
    LOG_PRETTY: 'false',
    SANDBOX_PAYMENT_LATENCY_MS: String(latencyMs),
    WEB_CONCURRENCY: String(web),
  };
  const children: Record<string, ChildProcess> = { web: start('src/server.ts', env, logFile) };
  if (fs.existsSync(path.join(ROOT, 'jobs/clock.ts'))) children.clock = start('jobs/clock.ts', env, logFile);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor(async () => (await fetch(`${url}/healthz`)).ok, 'web');
    say(`${web} web, ${workers} worker(s), payment latency ${latencyMs} ms: a backlog of ${BACKLOG} orders`);
    const drain = await drainBacklog(env, async () => {
      for (let i = 1; i <= workers; i++)
        children[`worker ${i}`] = start('workers/order.worker.ts', env, logFile);
      const ready = () => fs.readFileSync(logFile, 'utf8').split('"msg":"worker ready"').length - 1;
      await waitFor(() => ready() === workers, `${workers} workers`);
    });
    say(`drained at ${drain.perSecond} orders/s; now ${durationS} s of mixed load`);
    const report = await runLoad({
      url,
      dbPath: env.DB_PATH,
      durationS,
      connections: CONNECTIONS,
      overLimitRate: OVER_LIMIT_RATE,
      seedOrdersPerClient: 10,
      processes: [
        ...Object.entries(children).map(([name, child]) => ({ name, pid: child.pid! })),
        { name: 'redis-server', pid: redisPid },
      ],
    });
    const exitCodes: Record<string, number | null> = {};
    for (const [name, child] of Object.entries(children)) exitCodes[name] = await stop(child);
    return { ...setup, drain, report, exitCodes };
  } finally {
    await Promise.all(Object.values(children).map(stop));
    await redis.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function summary(runs: Run[]): string {
  const rows = runs.map((run) => {
    const { orders, kinds } = run.report;
    const p99 = (kind: string) => kinds.find((k) => k.kind === kind)?.p99 ?? '-';
    const all = kinds.reduce((n, k) => n + k.requests, 0);
    const unexpected = kinds.reduce((n, k) => n + k.unexpected + k.socketErrors, 0);
    const refused = kinds.reduce((n, k) => n + (k.statuses['429 4291'] ?? 0), 0);
    const base = runs.find((r) => r.latencyMs === run.latencyMs && r.workers === 1 && r.web === 1)?.drain
      .perSecond;
    const scale = base ? ` (×${(run.drain.perSecond / base).toFixed(2)})` : '';
    const clean = Object.values(run.exitCodes).every((code) => code === 0)
      ? 'yes'
      : JSON.stringify(run.exitCodes);
    return (
      `| ${run.latencyMs} | ${run.web} | ${run.workers} | ${run.drain.perSecond}${scale} | ${run.drain.coresBusy} | ${Math.round(all / run.report.durationS)} | ` +
      `${Math.round(orders.accepted / run.report.durationS)} | ${orders.peakBacklog} | ` +
      `${p99('dry-run')} / ${p99('order-async')} / ${p99('get')} / ${p99('search')} | ${refused} | ${unexpected} | ${clean} |`
    );
  });
  return [
    '| payment latency ms | web | workers | backlog drain, orders/s | cores busy in drain | mixed load, requests/s | orders accepted/s | peak backlog | p99 ms dry run / order / get / search | 4291 (deliberate) | unexpected answers | all exited 0 on SIGTERM |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

/** Replaces the `## Load` section of BENCHMARKS.md and leaves the other sections as they are. */
function writeSection(body: string): void {
  const file = path.join(ROOT, 'BENCHMARKS.md');
  const current = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '# Benchmarks\n';
  const section = `## Load\n\n${body.trim()}\n`;
  const start = current.indexOf('## Load\n');
  if (start === -1) return fs.writeFileSync(file, `${current.trimEnd()}\n\n${section}`);
  const next = current.indexOf('\n## ', start + 1);
  fs.writeFileSync(file, current.slice(0, start) + section + (next === -1 ? '' : current.slice(next)));
}

async function main() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '20' },
      workers: { type: 'string', default: '1,2,4' },
      'latency-ms': { type: 'string', default: '0,50' },
      'web-check': { type: 'string', default: '2' },
      'no-write': { type: 'boolean', default: false },
    },
  });
  const list = (value: string) => value.split(',').map(Number);
  const setups: Setup[] = list(values['latency-ms']).flatMap((latencyMs) =>
    list(values.workers).map((workers) => ({ latencyMs, workers, web: 1 })),
  );
  // One more run to see whether a web cluster helps: the mixed load is bound by one web process's core.
  const webCheck = Number(values['web-check']);
  if (webCheck > 1) setups.push({ latencyMs: 0, workers: 2, web: webCheck });
  const durationS = Number(values.duration);
  process.once('SIGINT', () => {
    for (const child of running) child.kill('SIGTERM');
    process.exit(130);
  });
  const runs: Run[] = [];
  for (const setup of setups) runs.push(await benchOnce(setup, durationS));
  const command =
    `node --import tsx scripts/bench-load.ts --duration ${durationS} --workers ${values.workers} ` +
    `--latency-ms ${values['latency-ms']} --web-check ${values['web-check']}`;
  const body = [
    `Command: \`${command}\` (${os.cpus().length} cores, ${new Date().toISOString().slice(0, 10)}; ${CONNECTIONS} connections, ` +
      `one access key each, plus one key at ${OVER_LIMIT_RATE} requests/s against RATE_LIMIT_PER_S=200, the deliberate 4291s).`,
    '',
    'Each run starts a fresh store and queue with the Procfile processes (web, N workers, clock). **Backlog drain**: ' +
      `${BACKLOG} orders accepted while the queue is paused, then resumed with every worker ready; orders/s from the ` +
      'resume to the last settlement, the workers alone. **Mixed load**: 40 % dry runs, 20 % real orders with ' +
      '`Prefer: respond-async`, 20 % gets, 20 % searches (each connection its own key with 10 orders of its own), ' +
      'every request signed afresh, for the stated time; the backlog then is what the workers had not settled yet. ' +
      'Payment latency is the sandbox processor delay (`SANDBOX_PAYMENT_LATENCY_MS`) that a real processor would add. ' +
      'Peak RSS is the kernel’s VmHWM of each process at the end of the run. Logs at info, as JSON lines to a file.',
    '',
    summary(runs),
    '',
    ...runs.flatMap((run) => [
      `### ${run.web} web, ${run.workers} worker${run.workers > 1 ? 's' : ''}, payment latency ${run.latencyMs} ms`,
      '',
      formatReport(run.report),
      '',
    ]),
  ].join('\n');
  process.stdout.write(`${body}\n`);
  if (!values['no-write']) writeSection(body);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
