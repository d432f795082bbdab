// `npm start`: one command for the whole service on this machine: Redis (REDIS_URL or a private one),
// the demo catalog and client, then the Procfile's web, worker and clock, restarted if they die and
// stopped cleanly on Ctrl-C.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { RUNTIME_SETTINGS, runtimeFilePath, writeRuntimeFile } from '../src/cli/runtime-file.js';
import { assertDataFolder, loadConfig } from '../src/config/config.js';
import { redisWhere } from '../src/redis/redis-sentinel.js';
import { openStore } from '../src/store/open-store.js';
import { ensurePrivateDir, restrictToOwner } from '../src/store/secrets/private-files.js';
import { seedDemo, writeDemoOrders } from './demo-data.js';
import { fromSource, readProcfile } from './procfile.js';
import { ensureRedis, startPrivateRedis, type RunningRedis } from './redis.js';

// Compiled (dist/scripts/start.js, as `npm start` runs it), it runs the Procfile's commands on the compiled
// entries; run from source through tsx (`npm run dev`), the same commands on the sources through tsx.
const COMPILED = import.meta.filename.endsWith('.js');
const ROOT = path.resolve(import.meta.dirname, COMPILED ? '../..' : '..');
// Each process gives itself 30 s to finish its work (src/processes/run-process.ts).
const STOP_TIMEOUT_MS = 35_000;
const PROCESSES = Object.fromEntries(
  Object.entries(readProcfile(ROOT)).map(([name, args]) => [name, COMPILED ? args : fromSource(args)]),
);

function say(line: string): void {
  process.stderr.write(`[start] ${line}\n`);
}

const children = new Map<string, ChildProcess>();
let stopping = false;
let ready = false;
let redis: Promise<RunningRedis> | undefined;
const runtimeFile = runtimeFilePath(ROOT);
const PROJECT_DATA = path.dirname(runtimeFile);

/**
 * Stops web, worker, clock and a private Redis (removing its folder) and the runtime file, whenever it comes:
 * during the start as well as after. A failure stops everything the same way, with exit code 1.
 */
async function shutdown(exitCode = 0): Promise<void> {
  if (stopping) return;
  stopping = true;
  if (children.size > 0) say('stopping web, worker and clock');
  await Promise.all([...children].map(([name, child]) => stopChild(name, child)));
  await (await redis?.catch(() => undefined))?.stop();
  if (ready) fs.rmSync(runtimeFile, { force: true });
  process.exit(exitCode);
}

function fail(message: string): Promise<void> {
  say(message);
  return shutdown(1);
}

/** Refuses a port another process listens on, before anything starts (its /healthz would look like ours). */
function assertPortFree(port: number, host: string, variable = 'PORT'): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          err.code === 'EADDRINUSE'
            ? `port ${port} on ${host} is in use: stop what listens there, or set ${variable}`
            : `cannot listen on ${host}:${port}: ${err.message}`,
        ),
      ),
    );
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

async function main(): Promise<void> {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void shutdown());
  // `kill` of npm's pid may end npm without passing the signal on: this process is then adopted by another
  // parent, which is the sign to stop everything it started.
  const parent = process.ppid;
  setInterval(() => process.ppid !== parent && void shutdown(), 250).unref();
  // Every setting is checked, and the port tried, before anything starts.
  const given: Record<string, string> = { ...(process.env as Record<string, string>) };
  given.HOST ||= '127.0.0.1';
  const settings = loadConfig(given);
  assertDataFolder(settings, ROOT);
  // It holds the runtime file and the demo profiles (and by default the store and its key): its owner's only.
  ensurePrivateDir(PROJECT_DATA);
  restrictToOwner(PROJECT_DATA);
  await assertPortFree(settings.PORT, given.HOST);
  await assertPortFree(settings.METRICS_PORT, settings.METRICS_HOST, 'METRICS_PORT');
  // Behind Sentinel the operator's Redis is used as it is; else REDIS_URL's, or a private one.
  redis = given.REDIS_SENTINELS
    ? Promise.resolve({ url: redisWhere(settings), stop: () => Promise.resolve() })
    : ensureRedis();
  const started = await redis;
  const { url: redisUrl } = started;
  restartWhenGone(started);
  const env: Record<string, string> = given.REDIS_SENTINELS ? given : { ...given, REDIS_URL: redisUrl };
  const redisNote = process.env.REDIS_URL || given.REDIS_SENTINELS ? '' : ' (private, disk-less)';
  if (!process.env.LOG_PRETTY && process.stdout.isTTY) env.LOG_PRETTY = 'true';
  const config = loadConfig(env);
  say(
    `redis ${redisUrl}${redisNote}; database ${config.DATABASE_URL ? 'PostgreSQL (DATABASE_URL)' : config.DB_PATH}`,
  );

  const urlHost = (host: string) => (host.includes(':') ? `[${host}]` : host);
  const baseUrl = `http://${urlHost(given.HOST)}:${config.PORT}`;
  // METRICS_PORT=0 lets web pick a free port: its log line 'web listening' names it.
  const metricsUrl =
    config.METRICS_PORT === 0
      ? 'the metricsPort of the log line "web listening" (METRICS_PORT=0)'
      : `http://${urlHost(config.METRICS_HOST)}:${config.METRICS_PORT}/metrics`;
  const store = await openStore(config, 'demo');
  // One profile per store: starting on PostgreSQL keeps the SQLite demo client's profile, and the reverse.
  const dataDir = path.resolve(ROOT, path.dirname(config.DB_PATH));
  const profile = path.join(dataDir, config.DATABASE_URL ? 'demo-client.postgres.json' : 'demo-client.json');
  const demo = await seedDemo(store, profile).finally(() => store.close());
  const bodies = writeDemoOrders(dataDir, demo.ccToken, 1001);
  // The README's commands name data/demo-*.json: with the store elsewhere, those follow this start's card too.
  if (dataDir !== PROJECT_DATA) writeDemoOrders(PROJECT_DATA, demo.ccToken, 1001);

  const launch = (name: string) => {
    if (stopping) return;
    const child = spawn(process.execPath, PROCESSES[name]!, {
      cwd: ROOT,
      env,
      stdio: 'inherit',
    });
    children.set(name, child);
    child.once('exit', (code, signal) => {
      children.delete(name);
      if (stopping) return;
      // Before ready, a process that stops stops the start: restarting it would only repeat its error.
      if (!ready)
        return void fail(
          `${name} exited (${signal ?? code}) before the service was ready; see its log above`,
        );
      say(`${name} exited (${signal ?? code}); restarting in 1 s`);
      setTimeout(() => !stopping && launch(name), 1000);
    });
  };
  for (const name of Object.keys(PROCESSES)) launch(name);
  await waitForHealth(`${baseUrl}/healthz`);
  if (stopping) return;
  ready = true;
  writeRuntimeFile(runtimeFile, {
    pid: process.pid,
    apiUrl: baseUrl,
    profile,
    env: Object.fromEntries(
      RUNTIME_SETTINGS.flatMap((name) => {
        const value = name === 'DB_PATH' ? config.DB_PATH : env[name];
        return value ? [[name, value]] : [];
      }),
    ),
  });

  const relative = (file: string) => path.relative(ROOT, file);
  process.stdout.write(
    [
      '',
      `Service ready at ${baseUrl}/v1 (OpenAPI: ${baseUrl}/v1/openapi.json)`,
      `Metrics (Prometheus, not on the API port): ${metricsUrl}; readiness: ${baseUrl}/readyz` +
        (config.ADMIN_USER ? `; queue dashboard: ${baseUrl}/admin/queues (ADMIN_USER)` : ''),
      `Demo client (saved in ${relative(profile)}):`,
      `  access key: ${demo.accessKey}`,
      `  secret key: ${demo.secretKey}`,
      `  card token: ${demo.ccToken}`,
      `Operator commands (npm run admin, npm run call) find this service through ${relative(runtimeFile)}.`,
      'From another terminal, a signed dry run, then the same order for real:',
      `  npm run --silent call -- POST /v1/orders ${relative(bodies.dryRun)}`,
      `  npm run --silent call -- POST /v1/orders ${relative(bodies.order)}`,
      'Ctrl-C stops everything.',
      '',
    ].join('\n'),
  );
}

/**
 * The private Redis dying (killed, out of memory) is no reason to stop: it is started again on its port, empty
 * as it began, and web, worker and clock reconnect. The store is the truth: reconciliation enqueues again the
 * orders still queued (after QUEUED_STALE_AFTER_S), the relay hands the pending webhook deliveries again.
 */
function restartWhenGone(running: RunningRedis): void {
  const port = Number(new URL(running.url).port);
  running.process?.once('exit', (code, signal) => {
    if (stopping) return;
    say(
      `redis exited (${signal ?? code}); starting it again on port ${port}, empty: the store keeps every order, ` +
        'and reconciliation enqueues again those still queued',
    );
    redis = running.stop().then(() => startPrivateRedis(port));
    redis.then(
      (again) => {
        if (stopping) return void again.stop();
        say('redis is back');
        restartWhenGone(again);
      },
      (err: unknown) => fail(`redis could not be started again: ${(err as Error).message}`),
    );
  });
}

/** SIGTERM, then SIGKILL if the process has not finished its work a little after its own grace period. */
function stopChild(name: string, child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    const kill = setTimeout(() => {
      say(`${name} still running after ${STOP_TIMEOUT_MS / 1000} s; killing it`);
      child.kill('SIGKILL');
    }, STOP_TIMEOUT_MS);
    child.once('exit', (code, signal) => {
      clearTimeout(kill);
      if (code !== 0) say(`${name} exited with ${signal ?? code}`);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

async function waitForHealth(url: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`web did not answer ${url} within 30 s`);
}

main().catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
