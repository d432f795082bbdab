// Small helpers the process-level tests share: run the operator CLI, wait for a condition.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The operator CLI as an operator runs it, with the given service environment (database, Redis, prefix). */
export function runAdmin(env: Record<string, string>, args: string[]): Promise<CliRun> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/admin.cli.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
  });
  return collect(child);
}

/**
 * The shell of an operator beside `npm start`: this process's environment, logs at warn, without any variable that
 * would point the CLI elsewhere than the service data/runtime.json describes (its store, Redis, address, keys, settings).
 */
export function operatorEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn' };
  for (const name of [
    'REDIS_URL',
    'DATABASE_URL',
    'DB_PATH',
    'QUEUE_PREFIX',
    'PORT',
    'API_URL',
    'ACCESS_KEY',
    'SECRET_KEY',
    'SECRETS_KEY',
    'QUEUED_STALE_AFTER_S',
    'WEBHOOK_ALLOW_PRIVATE',
  ])
    delete env[name];
  return env;
}

/** What a spawned command printed, and its exit code, once it has closed. */
export function collect(child: ChildProcess): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `condition` every `everyMs`; fails naming `what` when it does not hold within `timeoutMs`. */
export async function until(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what = 'condition',
  everyMs = 100,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not reached in ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}

/** Every JSON log line a spawned process writes from now on, parsed, in order. */
export function logLines(child: ChildProcess): { msg: string; [field: string]: unknown }[] {
  const lines: { msg: string }[] = [];
  let rest = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const parts = (rest + chunk.toString()).split('\n');
    rest = parts.pop()!;
    for (const part of parts) if (part.startsWith('{')) lines.push(JSON.parse(part));
  });
  return lines;
}
