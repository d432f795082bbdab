// The service's processes as benchmarks run them: each Procfile entry in its own Node process, logs as JSON
// lines appended to one file, stopped with SIGTERM as a platform would stop them.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { compiledEntry, fromSource, readProcfile } from '../procfile.js';
import { spawnTracked, stopChild } from '../../test/helpers/child-processes.js';
import { until } from '../../test/helpers/wait.js';

/** The project's root: this tree, whose service a bench runs unless given another checkout. */
export const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * How benchmarks run the service's entries: `dist` (the default) as production does, the Procfile's command on
 * the compiled build (built first when missing or stale); `tsx` (BENCH_RUNTIME=tsx) the same command on the
 * source through tsx. An entry the Procfile does not name (a baseline server) runs through tsx.
 */
export const RUNTIME: 'dist' | 'tsx' = process.env.BENCH_RUNTIME === 'tsx' ? 'tsx' : 'dist';
const PROCFILE = Object.values(readProcfile(ROOT));
let built = false;

/** Node's arguments to run `entry` (a source path from the repository root, e.g. src/server.ts). */
export function entryArgs(entry: string): string[] {
  const command = PROCFILE.find((args) => compiledEntry(args) === `dist/${entry.replace(/\.ts$/, '.js')}`);
  if (!command) return ['--import', 'tsx', entry];
  // BENCH_NO_PRELOAD=1: the command without the module it preloads (the tracing), to measure what that costs.
  const args = process.env.BENCH_NO_PRELOAD
    ? command.filter((arg) => !arg.startsWith('--import=./dist/'))
    : command;
  if (RUNTIME === 'tsx') return fromSource(args);
  if (!built) execFileSync('bash', [path.join(ROOT, 'scripts/build.sh'), '--if-stale'], { stdio: 'inherit' });
  built = true;
  return args;
}

/** Everything started here and not exited yet, so that Ctrl-C can stop it too. */
export const running = new Set<ChildProcess>();

/**
 * Node's options to profile a process started from `entry` when BENCH_PROFILE=DIR is set: its CPU profile (one
 * per thread; the largest is the main thread's) goes to DIR/<entry's name>.
 */
export function profileArgs(entry: string): string[] {
  return profileInto(path.basename(entry, path.extname(entry)));
}

/** Node's options to write a CPU profile into BENCH_PROFILE/`name` when BENCH_PROFILE is set; none otherwise. */
function profileInto(name: string): string[] {
  const dir = process.env.BENCH_PROFILE;
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${path.join(dir, name)}`] : [];
}

/** Starts `entry` (a path from the repository root) with exactly `env`, its output appended to `logFile`. */
export function startEntry(entry: string, env: NodeJS.ProcessEnv, logFile: string): ChildProcess {
  return spawnLogged([process.execPath, ...profileArgs(entry), ...entryArgs(entry)], ROOT, env, logFile);
}

/**
 * Starts the Procfile's `name` process of the checkout at `root` (its compiled build), as a platform would, its
 * output appended to `logFile`; under `wrap` when given (a command and its options, e.g. valgrind's). With
 * BENCH_PROFILE=DIR, its CPU profile goes to DIR/`name` (a file per process: several workers, or two trees'
 * processes under --checkout, each write their own, named by process id).
 */
export function startProcfileProcess(
  root: string,
  name: string,
  env: NodeJS.ProcessEnv,
  logFile: string,
  wrap: readonly string[] = [],
): ChildProcess {
  const args = readProcfile(root)[name];
  if (!args) throw new Error(`${root}/Procfile names no '${name}' process`);
  compiledEntry(args);
  return spawnLogged([...wrap, process.execPath, ...profileInto(name), ...args], root, env, logFile);
}

function spawnLogged(
  [command, ...args]: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  logFile: string,
): ChildProcess {
  const log = fs.openSync(logFile, 'a');
  const child = spawnTracked(running, command!, args, { cwd, env, stdio: ['ignore', log, log] });
  fs.closeSync(log);
  return child;
}

/** Builds the dist/ of the checkout at `root` when stale; one without node_modules first gets a link to this tree's. */
export async function buildCheckout(root: string): Promise<void> {
  const modules = path.join(root, 'node_modules');
  if (!fs.existsSync(modules)) {
    process.stderr.write(`[bench] ${root} has no node_modules: linking ${path.join(ROOT, 'node_modules')}\n`);
    fs.symlinkSync(path.join(ROOT, 'node_modules'), modules);
  }
  await new Promise<void>((resolve, reject) => {
    const build = spawn('bash', [path.join(root, 'scripts/build.sh'), '--if-stale'], {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    build.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`build in ${root}: ${code}`))));
  });
}

/** SIGTERM, and the exit code once it has exited (null when a signal ended it). */
export function stopProcess(child: ChildProcess): Promise<number | null> {
  return stopChild(child);
}

/** Polls `check` every `everyMs` until it holds; a check that throws counts as not yet. */
export function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 30_000,
  everyMs = 200,
): Promise<void> {
  const tolerant = () =>
    Promise.resolve()
      .then(check)
      .catch(() => false);
  return until(tolerant, timeoutMs, what, everyMs);
}

/** Resolves once the web process answers /healthz. */
export async function waitForWeb(baseUrl: string, web: ChildProcess): Promise<void> {
  const exited = () => web.exitCode !== null || web.signalCode !== null;
  await waitFor(async () => exited() || (await fetch(`${baseUrl}/healthz`)).ok, `${baseUrl}/healthz`);
  if (exited()) throw new Error(`web exited (${web.signalCode ?? web.exitCode}) before answering`);
}

/** Resolves once `count` workers logged to `logFile` that they are ready. */
export function waitForWorkers(logFile: string, count: number, timeoutMs?: number): Promise<void> {
  const ready = () => fs.readFileSync(logFile, 'utf8').split('"msg":"worker ready"').length - 1;
  return waitFor(() => ready() >= count, `${count} workers ready`, timeoutMs);
}

/**
 * Runs a bench's `main`: a failure prints its stack and exits 1 (whatever it left running). `exitWhenDone` also
 * exits 0 once it has resolved, for a bench whose clients may leave a handle open.
 */
export function runBench(main: () => Promise<void>, { exitWhenDone = false } = {}): void {
  main().then(
    () => {
      if (exitWhenDone) process.exit(0);
    },
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}

/**
 * A web and `workers` order workers on `env` (its PORT the web's), their output appended to `logFile`; resolves
 * with the web once it answers and every worker is ready.
 */
export async function startWebAndWorkers(
  env: NodeJS.ProcessEnv,
  logFile: string,
  workers: number,
): Promise<ChildProcess> {
  const web = startEntry('src/server.ts', env, logFile);
  for (let i = 0; i < workers; i++) startEntry('workers/order.worker.ts', env, logFile);
  await waitForWeb(`http://127.0.0.1:${env.PORT}`, web);
  await waitForWorkers(logFile, workers);
  return web;
}

/** Stops every process still running when this one is interrupted, then exits. */
export function stopAllOnInterrupt(cleanup: () => Promise<void> = () => Promise.resolve()): void {
  process.once('SIGINT', () => {
    void Promise.all([...running].map(stopProcess))
      .then(cleanup)
      .finally(() => process.exit(130));
  });
}

/**
 * The web's event-loop delay p99 in ms since the previous scrape of its /metrics at `baseUrl`, its metrics
 * listener (METRICS_PORT) (prom-client resets the
 * histogram at each scrape; it samples every 10 ms, and each sample includes those 10 ms: 10 is no delay).
 */
export async function eventLoopP99Ms(baseUrl: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const value = /^nodejs_eventloop_lag_p99_seconds(?:\{[^}]*\})? (\S+)$/m.exec(text)?.[1];
  return value === undefined ? NaN : Math.round(Number(value) * 10_000) / 10;
}

/** A process's CPU seconds and its garbage collections by kind (count, seconds), from its /metrics (prom-client). */
export interface CpuAndGc {
  cpuS: number;
  gc: Record<string, { count: number; seconds: number }>;
}

/** CpuAndGc of the web whose metrics listener is at `baseUrl`; subtract two (`cpuAndGcSince`) for a span. */
export async function cpuAndGc(baseUrl: string): Promise<CpuAndGc> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const cpuS = Number(/^process_cpu_seconds_total(?:\{[^}]*\})? (\S+)$/m.exec(text)?.[1] ?? NaN);
  const gc: CpuAndGc['gc'] = {};
  for (const [, part, kind, value] of text.matchAll(
    /^nodejs_gc_duration_seconds_(count|sum)\{[^}]*kind="([^"]+)"[^}]*\} (\S+)$/gm,
  )) {
    const entry = (gc[kind!] ??= { count: 0, seconds: 0 });
    if (part === 'count') entry.count = Number(value);
    else entry.seconds = Number(value);
  }
  return { cpuS, gc };
}

/** What `later` used beyond `earlier`, and its one-line account: `CPU 1.2 s; GC major 3 (85 ms), minor 40 (60 ms)`. */
export function cpuAndGcSince(
  earlier: CpuAndGc,
  later: CpuAndGc,
): { cpuS: number; majorGcs: number; text: string } {
  const kinds = Object.keys(later.gc).map((kind) => {
    const before = earlier.gc[kind] ?? { count: 0, seconds: 0 };
    const count = later.gc[kind]!.count - before.count;
    const ms = (later.gc[kind]!.seconds - before.seconds) * 1000;
    return { kind, count, text: `${kind} ${count} (${ms.toFixed(0)} ms)` };
  });
  const cpuS = later.cpuS - earlier.cpuS;
  return {
    cpuS,
    majorGcs: kinds.find((k) => k.kind === 'major')?.count ?? 0,
    text: `CPU ${cpuS.toFixed(2)} s; GC ${
      kinds
        .filter((k) => k.count > 0)
        .map((k) => k.text)
        .join(', ') || 'none'
    }`,
  };
}
