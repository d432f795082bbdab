import type { Config } from '../config/config.js';
import { createSealer } from '../domain/secrets.js';
import { groupAttempts, groupCommits, groupSettlements } from './decorators/group-commit.js';
import { groupCatalogReads, groupOrderReads } from './decorators/group-reads.js';
import { resolveSecretsKey } from './secrets/secrets-key.js';
import type { Store } from './port/store.port.js';
import type { MigrationOptions } from './migration-options.js';

const toStderr = (message: string): void => void process.stderr.write(`${message}\n`);

/**
 * The store every process uses: PostgreSQL when DATABASE_URL is set, else the SQLite file at DB_PATH; its
 * secrets under SECRETS_KEY (on SQLite without it, the data folder's secrets.key, generated once and told to
 * `note`, stderr by default). Single orders accepted together share a transaction, and so do attempts and
 * settlements (group-commit.ts); gets of one order and catalog reads asked for together share a statement
 * (group-reads.ts). `migration`: the gate asked before migrating, and whether to refuse while a step is pending.
 */
export async function openStore(
  config: Pick<Config, 'DATABASE_URL' | 'DB_PATH' | 'DB_POOL_SIZE' | 'SECRETS_KEY'> &
    Partial<
      Pick<
        Config,
        | 'SECRETS_KEY_PREVIOUS'
        | 'WEB_DB_BUSY_TIMEOUT_MS'
        | 'DATABASE_POOLING'
        | 'DATABASE_DIRECT_URL'
        | 'DATABASE_TIMEOUT_MS'
        | 'DB_POOL_CLIENT_SHARE'
      >
    >,
  role = 'service',
  note: (message: string) => void = toStderr,
  migration: MigrationOptions = {},
): Promise<Store> {
  const store = await openAdapter(config, role, note, migration);
  return {
    ...store,
    orders: groupOrderReads(groupCommits(store.orders)),
    catalog: groupCatalogReads(store.catalog),
    processing: groupAttempts(groupSettlements(store.processing)),
  };
}

async function openAdapter(
  config: Parameters<typeof openStore>[0],
  role: string,
  note: (message: string) => void,
  migration: MigrationOptions,
): Promise<Store> {
  const keys = resolveSecretsKey(config, note);
  const sealer = createSealer(keys.key, keys.previous);
  // Each adapter is loaded only where it is used: a process keeps one database driver in memory, not two.
  if (config.DATABASE_URL) {
    const { openPostgresStore } = await import('./postgres/postgres.store.js');
    return openPostgresStore(config.DATABASE_URL, {
      ...migration,
      poolSize: config.DB_POOL_SIZE,
      clientShare: config.DB_POOL_CLIENT_SHARE,
      applicationName: role,
      pooling: config.DATABASE_POOLING,
      // The operator's commands (a large catalog import, a re-seal) may take as long as they need.
      timeoutMs: role === 'admin' ? 0 : (config.DATABASE_TIMEOUT_MS ?? 0),
      sealer,
      // A session for LISTEN: DATABASE_DIRECT_URL, else DATABASE_URL unless it is a transaction pooler.
      listenUrl:
        config.DATABASE_DIRECT_URL ??
        (config.DATABASE_POOLING === 'transaction' ? undefined : config.DATABASE_URL),
    });
  }
  const { openSqliteStore, WEB_CHECKPOINT_PAGES, WORKER_CACHE_KIB } =
    await import('./sqlite/sqlite.store.js');
  // The web waits for another process's write lock without stalling its other requests, answers 503 when the
  // wait runs out, and leaves the log's checkpoints to the workers and the clock. The workers and the clock wait
  // the same way (up to 10 s): in SQLite's busy handler, a worker's every job stood still while it slept, in
  // steps growing to 25 ms and more past the lock's release). The web reads a search page whose cost the
  // plan cannot bound on a thread, under the deadline PostgreSQL's statements have.
  const web = role === 'web';
  return openSqliteStore(config.DB_PATH, {
    ...migration,
    sealer,
    busyTimeoutMs: web ? config.WEB_DB_BUSY_TIMEOUT_MS : undefined,
    waitUnblocked: web || role === 'worker' || role === 'clock',
    checkpointPages: web ? WEB_CHECKPOINT_PAGES : undefined,
    cacheKiB: role === 'worker' ? WORKER_CACHE_KIB : undefined,
    searchThread: web ? { timeoutMs: config.DATABASE_TIMEOUT_MS ?? 0 } : undefined,
  });
}
