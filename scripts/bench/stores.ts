// The stores benchmarks run on, picked as the service picks its own: a fresh SQLite file, or a fresh database
// on a PostgreSQL server (DATABASE_URL's server, else a private one started once per script), or the store the
// environment names (DATABASE_URL, else DB_PATH). Raw SQL goes through a probe, never a driver.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config/config.js';
import { openStore } from '../../src/store/open-store.js';
import { postgresProbe } from '../../test/helpers/postgres.probe.js';
import { sqliteProbe } from '../../test/helpers/sqlite.probe.js';
import type { Store } from '../../src/store/port/store.port.js';
import type { Probe } from '../../test/helpers/store.probe.js';
import { createDatabase, dropDatabase, ensurePostgres, type RunningPostgres } from '../postgres.js';
import { running, stopAllOnInterrupt, stopProcess } from './processes.js';

export type StoreKind = 'sqlite' | 'postgres';

export interface BenchStore {
  kind: StoreKind;
  /**
   * What a service process needs in its environment to use this store (and nothing naming another): the
   * database, and the SECRETS_KEY its secrets are sealed under when this module chose it.
   */
  env: ({ DB_PATH: string } | { DATABASE_URL: string }) & { SECRETS_KEY?: string };
  /** The store as a service process opens it (migrated). */
  open(role?: string): Promise<Store>;
  /** Raw SQL on the same database, `?` placeholders on both stores. */
  probe(): Probe;
  /** Removes the file or database when this module made it; a store named by the environment is kept. */
  remove(): Promise<void>;
}

/** `sqlite,postgres` as a list of store kinds. */
export function parseStoreKinds(value: string): StoreKind[] {
  return value.split(',').map((name) => {
    const kind = name.trim();
    if (kind !== 'sqlite' && kind !== 'postgres')
      throw new Error(`unknown store '${kind}': sqlite or postgres`);
    return kind;
  });
}

/**
 * 0 once every order is settled, else 1. It stops at the first unsettled order, where a count reads them all: a
 * count of a backlog of thousands, polled every 20 ms, was a tenth of the PostgreSQL server's CPU in a drain
 * (a sequential scan), charged to the service's orders.
 */
export const ANY_UNSETTLED = `SELECT count(*) FROM (SELECT 1 FROM orders WHERE phase <> 'settled' LIMIT 1) AS o`;

/** The store kind the environment picks: PostgreSQL when DATABASE_URL is set. */
export const defaultStoreKind = (): StoreKind => (process.env.DATABASE_URL ? 'postgres' : 'sqlite');

/** `temporary`: removed at the end of the run, so a SECRETS_KEY file generated beside it need not be told. */
function benchStore(env: BenchStore['env'], remove: () => Promise<void>, temporary: boolean): BenchStore {
  const store: BenchStore = {
    kind: 'DATABASE_URL' in env ? 'postgres' : 'sqlite',
    env,
    // Configured as its service processes are, so that all of them use one SECRETS_KEY.
    open: (role = 'bench') =>
      openStore(
        loadConfig({ ...serviceEnv(store), LOG_LEVEL: 'silent' }),
        role,
        temporary ? () => undefined : undefined,
      ),
    probe: () => ('DATABASE_URL' in env ? postgresProbe(env.DATABASE_URL) : sqliteProbe(env.DB_PATH)),
    remove,
  };
  return store;
}

/** The store the service would use with this environment: DATABASE_URL, else DB_PATH (default ./data/orders.db). */
export function storeFromEnv(env: NodeJS.ProcessEnv = process.env): BenchStore {
  const config = loadConfig({ ...env, LOG_LEVEL: 'silent' });
  const keep = () => Promise.resolve();
  const secrets = config.SECRETS_KEY ? { SECRETS_KEY: config.SECRETS_KEY } : {};
  return benchStore(
    config.DATABASE_URL
      ? { DATABASE_URL: config.DATABASE_URL, ...secrets }
      : { DB_PATH: config.DB_PATH, ...secrets },
    keep,
    false,
  );
}

/** The store the environment names when it names one (DATABASE_URL or DB_PATH), else a fresh SQLite file. */
export function storeFromEnvOrFresh(name: string): Promise<BenchStore> {
  return process.env.DATABASE_URL || process.env.DB_PATH
    ? Promise.resolve(storeFromEnv())
    : freshStore('sqlite', name);
}

let server: Promise<RunningPostgres> | undefined;
let databases = 0;

/**
 * The PostgreSQL server of this script: DATABASE_URL's server, else a private one started on first use; with
 * BENCH_POSTGRES_DURABLE=true it keeps fsync, synchronous_commit and full_page_writes on, as operators run it.
 */
export function postgresServer(): Promise<RunningPostgres> {
  return (server ??= ensurePostgres({ durable: process.env.BENCH_POSTGRES_DURABLE === 'true' }));
}

/** The private server's postmaster pid (its backends are its children), or undefined for DATABASE_URL's. */
export async function postgresServerPid(): Promise<number | undefined> {
  const { dataDir } = await postgresServer();
  if (!dataDir) return undefined;
  const pid = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** Stops a private server started here and removes its data; DATABASE_URL's server is left alone. */
export async function stopPostgresServer(): Promise<void> {
  const started = server;
  server = undefined;
  if (started) await (await started).stop();
}

/** A fresh, empty store of this kind for one run: a file in a temporary directory, or a new database. */
export async function freshStore(kind: StoreKind, name: string): Promise<BenchStore> {
  if (kind === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${name}-`));
    const remove = async () => fs.rmSync(dir, { recursive: true, force: true });
    return benchStore({ DB_PATH: path.join(dir, 'orders.db') }, remove, true);
  }
  const { url } = await postgresServer();
  const database = `${name}_${process.pid}_${++databases}`.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  await dropDatabase(url, database);
  const secretsKey = process.env.SECRETS_KEY ?? crypto.randomBytes(32).toString('hex');
  const remove = () => dropDatabase(url, database);
  return benchStore(
    { DATABASE_URL: await createDatabase(url, database), SECRETS_KEY: secretsKey },
    remove,
    true,
  );
}

/**
 * The environment of a service process on `store`: this process's, with the other store's variable removed
 * (a DATABASE_URL left in it would win over DB_PATH), and `extra` on top.
 */
export function serviceEnv(store: BenchStore, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  // A web's metrics listener on a free port unless the bench chooses one (it scrapes that one).
  const env: NodeJS.ProcessEnv = { ...process.env, METRICS_PORT: '0', ...store.env, ...extra };
  if (!('DATABASE_URL' in store.env)) delete env.DATABASE_URL;
  return env;
}

/**
 * The environment of the order service as the order benches run it on `store`: its Redis and a queue prefix of
 * its own, the web on `port`, JSON logs at info (the workers' "worker ready" is waited for), and no rate limit,
 * so that every order of the bench is taken; `extra` adds to it or overrides.
 */
export function orderServiceEnv(
  store: BenchStore,
  { redisUrl, prefix, port }: { redisUrl: string; prefix: string; port: number },
  extra: Record<string, string> = {},
): NodeJS.ProcessEnv {
  return serviceEnv(store, {
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    LOG_LEVEL: 'info',
    LOG_PRETTY: 'false',
    RATE_LIMIT_PER_S: '0',
    PORT: String(port),
    ...extra,
  });
}

/**
 * The end of a bench: every process it started stopped, then `redis`, `store` when given (a database is dropped
 * while its server still runs), and the private PostgreSQL server when one was started.
 */
export async function stopServers(redis: { stop(): Promise<void> }, store?: BenchStore): Promise<void> {
  await Promise.all([...running].map(stopProcess));
  await redis.stop();
  await store?.remove();
  await stopPostgresServer();
}

/** On Ctrl-C: every process this bench started stopped, then `redis` and the private PostgreSQL server, then exit. */
export function stopServersOnInterrupt(redis: { stop(): Promise<void> }): void {
  stopAllOnInterrupt(async () => {
    await redis.stop();
    await stopPostgresServer();
  });
}
