import fs from 'node:fs';
import path from 'node:path';

/**
 * What `npm start` tells the operator commands while it runs: where its API, Redis and store are, and the demo
 * profile. Written when the service is ready, removed when it stops; a file whose process is gone is ignored.
 */
export interface RuntimeFile {
  pid: number;
  apiUrl: string;
  profile: string;
  /** The settings that locate the running service (REDIS_URL, DB_PATH or DATABASE_URL, QUEUE_PREFIX…). */
  env: Record<string, string>;
}

/** The variables an operator command takes from a running `npm start` when they are not set. */
export const RUNTIME_SETTINGS = [
  'REDIS_URL',
  'REDIS_CLUSTER',
  'REDIS_SENTINELS',
  'REDIS_SENTINEL_MASTER',
  'REDIS_SENTINEL_PASSWORD',
  'QUEUE_PREFIX',
  'DB_PATH',
  'DATABASE_URL',
  'DATABASE_POOLING',
  // Not where the service is, but what its workers allow: webhook:add then checks a URL as they will.
  'WEBHOOK_ALLOW_PRIVATE',
] as const;

/** Of RUNTIME_SETTINGS, those that do not aim a command at another Redis or store when set. */
const NOT_LOCATING: readonly string[] = ['QUEUE_PREFIX', 'WEBHOOK_ALLOW_PRIVATE'];

export const runtimeFilePath = (root: string = process.cwd()): string =>
  path.join(root, 'data', 'runtime.json');

export function writeRuntimeFile(file: string, runtime: RuntimeFile): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(runtime, null, 2)}\n`, { mode: 0o600 });
}

/** The running service's file, or null when there is none or its process has gone. */
export function readRuntimeFile(file: string = runtimeFilePath()): RuntimeFile | null {
  let runtime: RuntimeFile;
  try {
    runtime = JSON.parse(fs.readFileSync(file, 'utf8')) as RuntimeFile;
  } catch {
    return null;
  }
  try {
    process.kill(runtime.pid, 0);
    return runtime;
  } catch {
    return null;
  }
}

/**
 * The environment with a running `npm start`'s settings filled in where unset; `used` names those taken.
 * Set variables always win: an operator may aim a command elsewhere.
 */
export function withRuntimeSettings(
  env: NodeJS.ProcessEnv,
  runtime: RuntimeFile | null,
): { env: Record<string, string | undefined>; used: string[] } {
  if (!runtime) return { env, used: [] };
  const located = RUNTIME_SETTINGS.some((name) => !NOT_LOCATING.includes(name) && env[name]);
  // An operator who aimed the command at a store or Redis of their own gets none of the running service's.
  if (located) return { env, used: [] };
  const used = RUNTIME_SETTINGS.filter((name) => runtime.env[name] !== undefined && !env[name]);
  return { env: { ...env, ...Object.fromEntries(used.map((n) => [n, runtime.env[n]])) }, used };
}
