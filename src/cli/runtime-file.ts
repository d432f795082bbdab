import fs from 'node:fs';
import path from 'node:path';
import { writePrivateFile } from '../store/secrets/private-files.js';

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

/** The deadlines and limits by which a reconciliation pass moves orders and items (services/reconcile.ts). */
const RECONCILE_SETTINGS = [
  'QUEUED_STALE_AFTER_S',
  'MAX_PROCESS_ATTEMPTS',
  'ATTEMPT_LEASE_S',
  'SHIP_DEADLINE_H',
  'EXTRA_SHIPPING_TIMEOUT_H',
] as const;

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
  // What opens the store's secrets (required with DATABASE_URL): the file is the owner's only, as secrets.key is.
  'SECRETS_KEY',
  'SECRETS_KEY_PREVIOUS',
  // What a reconciliation pass judges by: `admin reconcile` beside the service moves what its clock would.
  ...RECONCILE_SETTINGS,
] as const;

/** Of RUNTIME_SETTINGS, those that do not aim a command at another Redis or store when set. */
const NOT_LOCATING: readonly string[] = [
  'QUEUE_PREFIX',
  'WEBHOOK_ALLOW_PRIVATE',
  'SECRETS_KEY',
  'SECRETS_KEY_PREVIOUS',
  ...RECONCILE_SETTINGS,
];

/**
 * The project's folder, found from this file's own place (src/cli, or dist/src/cli once compiled) as `npm start`
 * finds it: a command run from another folder reads the running service's file, not a `data/` of that folder.
 */
export const PROJECT_ROOT = projectRootFrom(import.meta.dirname);

function projectRootFrom(dir: string): string {
  for (let at = dir; ; at = path.dirname(at)) {
    if (fs.existsSync(path.join(at, 'Procfile')) && fs.existsSync(path.join(at, 'package.json'))) return at;
    if (path.dirname(at) === at) return path.resolve(dir, '../..');
  }
}

export const runtimeFilePath = (root: string = PROJECT_ROOT): string =>
  path.join(root, 'data', 'runtime.json');

/** Writes the file whole, readable by this user only (it may hold SECRETS_KEY). */
export function writeRuntimeFile(file: string, runtime: RuntimeFile): void {
  writePrivateFile(file, `${JSON.stringify(runtime, null, 2)}\n`, { replace: true });
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
  // A setting that names what the running service uses (DB_PATH=/x after DB_PATH=/x npm start) aims nowhere else.
  const same = (name: string, value: string) => {
    const theirs = runtime.env[name];
    if (theirs === undefined) return false;
    return name === 'DB_PATH' ? path.resolve(value) === path.resolve(theirs) : value === theirs;
  };
  const elsewhere = RUNTIME_SETTINGS.some(
    (name) => !NOT_LOCATING.includes(name) && env[name] && !same(name, env[name]),
  );
  // An operator who aimed the command at a store or Redis of their own gets none of the running service's.
  if (elsewhere) return { env, used: [] };
  const used = RUNTIME_SETTINGS.filter((name) => runtime.env[name] !== undefined && !env[name]);
  return { env: { ...env, ...Object.fromEntries(used.map((n) => [n, runtime.env[n]])) }, used };
}
