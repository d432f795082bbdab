// Starting and stopping the service's processes, for the tests and the benchmarks alike (scripts/bench imports
// this, never the other way): every child is tracked in a set from spawn to exit, and stopped as a platform would
// stop it. Apart from test-service.ts, so that a bench does not load the test harness (the app, supertest,
// vitest) to start a process.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');
// Resolved here, so a process started in another working directory still finds it.
const TSX = import.meta.resolve('tsx');
// As the Procfile loads it: tracing when OTEL_EXPORTER_OTLP_ENDPOINT is set, nothing else.
const TRACING = path.join(ROOT, 'src/tracing/preload.ts');

/** Spawns `command` and keeps it in `children` until it exits, so that whoever started it can stop it all. */
export function spawnTracked(
  children: Set<ChildProcess>,
  command: string,
  args: readonly string[],
  options: SpawnOptions,
): ChildProcess {
  const child = spawn(command, args, options);
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/**
 * Spawns a process entry (`src/server.ts`, `workers/…`) of the tree at `root` (this one by default; another
 * release's, test/helpers/previous-release.ts) with tsx, in `cwd` (`root` by default), and waits for `readyLine`
 * on its stdout when given; `env` is added to this process's own unless `isolated`.
 */
export async function spawnProcess(
  children: Set<ChildProcess>,
  entry: string,
  env: Record<string, string | undefined>,
  readyLine?: string,
  {
    root = ROOT,
    cwd = root,
    isolated = false,
    readyMs = 30_000,
    nodeArgs,
  }: {
    root?: string;
    cwd?: string;
    isolated?: boolean;
    readyMs?: number;
    /** Node's arguments instead of `entry` from source (a Procfile command's, compiled: relative to `cwd`). */
    nodeArgs?: readonly string[];
  } = {},
): Promise<ChildProcess> {
  const tracing = path.join(root, path.relative(ROOT, TRACING));
  const args = nodeArgs ? [...nodeArgs] : ['--import', TSX, '--import', tracing, path.join(root, entry)];
  const child = spawnTracked(children, process.execPath, args, {
    cwd,
    env: {
      ...(isolated ? { PATH: process.env.PATH } : process.env),
      // Web processes side by side: each metrics listener on a free port unless the test chooses one.
      METRICS_PORT: '0',
      ...env,
      LOG_LEVEL: readyLine ? 'info' : env.LOG_LEVEL,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  if (!readyLine) return child;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${entry} not ready in ${readyMs / 1000} s:\n${output}`)),
      readyMs,
    );
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(readyLine)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`${entry} exited with ${code}:\n${output}`)));
  });
  child.stdout!.resume();
  return child;
}

/** Sends `signal` (SIGTERM, as a platform stops a process) and resolves with the exit code once it has exited. */
export function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.kill(signal);
  });
}
