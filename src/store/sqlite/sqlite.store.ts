import path from 'node:path';
import type { Sealer } from '../../domain/secrets.js';
import { cursorKeyOf, SecretsKeyMismatchError, type StoreSecrets } from '../secrets/store-secrets.js';
import type { MigrationSteps, Store, StoreCounts } from '../port/store.port.js';
import { assertStepsDone, type MigrationOptions } from '../migration-options.js';
import { sqliteMigrationSteps } from './migration-steps.sqlite.js';
import { MIGRATIONS } from './sqlite.migrations.js';
import { sqliteCatalog } from './catalog.sqlite.js';
import { openSqliteSecrets, sqliteClients } from './clients.sqlite.js';
import { sqliteItems } from './items.sqlite.js';
import { sqliteLedger } from './ledger.sqlite.js';
import { sqliteOrders } from './orders.sqlite.js';
import { sqlitePayments } from './payments.sqlite.js';
import { sqliteProcessing } from './processing.sqlite.js';
import { sqliteReconcile } from './reconcile.sqlite.js';
import { sqliteSearch, type SqliteSearchOptions } from './search.sqlite.js';
import { SECRETS_MIGRATION } from './secrets.migration.js';
import { backfillItemCounts, ITEMS_OF_ORDER } from './item-counts.sqlite.js';
import {
  dbFile,
  incrementalVacuum,
  migrate,
  openDb,
  pendingMigrations,
  restrictDbFiles,
  truncateWal,
  type Db,
} from './sqlite.db.js';
import { sqliteWebhooks } from './webhooks.sqlite.js';
import { sqliteRetention } from './retention.sqlite.js';
import { waitUnblocked } from './wait-unblocked.js';
import { flushedStore } from './flushed-store.js';
import { walFlusher, type WalFlusher, type WalFs } from './wal-flusher.js';

export interface SqliteStoreOptions extends SqliteSearchOptions, MigrationOptions {
  /** Seals the clients' secret keys; must be the key the file was first sealed or last rotated with. */
  sealer: Sealer;
  /**
   * How long an operation waits for another process's write lock before failing (SQLITE_BUSY); 10 s when
   * absent. The migrations at open always wait up to 10 s.
   */
  busyTimeoutMs?: number;
  /**
   * Wait for the write lock between turns of the event loop rather than in SQLite's busy handler, which sleeps
   * in the calling thread (wait-unblocked.ts): for the web, whose every request would wait with it.
   */
  waitUnblocked?: boolean;
  /**
   * Pages of write-ahead log after which a commit of this connection copies them back into the file (SQLite's
   * wal_autocheckpoint); WORKER_CHECKPOINT_PAGES when absent.
   */
  checkpointPages?: number;
  /** The most KiB of pages this connection keeps cached (SQLite's cache_size); SQLite's 2000 when absent. */
  cacheKiB?: number;
  /** The log's file calls (a test's stand-in); node:fs when absent. */
  walFs?: WalFs;
  /** Called once when a flush of the log fails; stopFlushFailed (the process stops) when absent. */
  onFlushFailure?: (err: unknown) => void;
}

/**
 * A failed flush leaves the process unable to tell what is on the disk (wal-flusher.ts): it stops, uncaught,
 * so that its supervisor restarts it and SQLite's recovery reads the log as the disk holds it.
 */
export function stopFlushFailed(err: unknown): void {
  setImmediate(() => {
    throw new Error('SQLite: the flush of the write-ahead log failed; stopping (crash-only)', { cause: err });
  });
}

/**
 * Fewer, larger checkpoints than SQLite's default of 1000 pages: a page rewritten by many orders (a listing's
 * stock, an index leaf) is copied back once per checkpoint (BENCHMARKS.md); the log is reused after each.
 */
export const WORKER_CHECKPOINT_PAGES = 10_000;

/**
 * A worker's page cache, smaller than SQLite's 2000 KiB: its transactions touch a few pages each, and every
 * commit of another process (the web's orders) empties the cache of a connection in WAL mode anyway.
 */
export const WORKER_CACHE_KIB = 512;
/**
 * The web checkpoints only when the log has grown four times past that, i.e. when no worker or clock does: a
 * checkpoint runs synchronously inside the commit that crosses the bound, on the request path.
 */
export const WEB_CHECKPOINT_PAGES = 4 * WORKER_CHECKPOINT_PAGES;

/**
 * The embedded store: one better-sqlite3 connection to the file at `dbPath`, migrated on open. Every
 * operation is one synchronous transaction (`BEGIN IMMEDIATE` where it reads then writes), so processes on
 * one host that share the file are serialised by SQLite's write lock.
 */
export async function openSqliteStore(dbPath: string, options: SqliteStoreOptions): Promise<Store> {
  const db = openDb(dbPath);
  let secrets: StoreSecrets;
  let steps: MigrationSteps;
  try {
    const pending = pendingMigrations(db);
    if (pending.length > 0) await options.gate?.('sqlite', pending);
    migrateAndTidy(db, dbPath, options.sealer);
    steps = sqliteMigrationSteps(db);
    if (options.stepsDone) await assertStepsDone(steps);
    secrets = openSqliteSecrets(db, options.sealer);
  } catch (err) {
    db.close();
    throw err;
  }
  if (options.waitUnblocked) db.pragma('busy_timeout = 0');
  else if (options.busyTimeoutMs !== undefined)
    db.pragma(`busy_timeout = ${Math.trunc(options.busyTimeoutMs)}`);
  db.pragma(`wal_autocheckpoint = ${Math.trunc(options.checkpointPages ?? WORKER_CHECKPOINT_PAGES)}`);
  if (options.cacheKiB !== undefined) db.pragma(`cache_size = ${-Math.trunc(options.cacheKiB)}`);
  const itemsByStatus = db.prepare<[], { status: number; count: number }>(
    'SELECT status, count(*) AS count FROM order_items GROUP BY status',
  );
  // orders_unsettled_client is a covering partial index of exactly these rows, with their item counts.
  const unsettledByPhase = db.prepare<[], StoreCounts['unsettledByPhase'][number]>(
    `SELECT phase, count(*) AS count, total(${ITEMS_OF_ORDER}) AS items FROM orders o
      WHERE phase <> 'settled' GROUP BY phase`,
  );
  const ping = db.prepare<[], string>('SELECT key_id FROM store_secrets WHERE id = 1').pluck();
  const flusher = openFlusher(db, dbPath, options);
  await flusher.flushed(); // the migrations' commits
  const search = sqliteSearch(db, cursorKeyOf(secrets), options);
  const store: Store = {
    kind: 'sqlite',
    clients: sqliteClients(db, secrets),
    catalog: sqliteCatalog(db),
    orders: sqliteOrders(db),
    processing: sqliteProcessing(db),
    items: sqliteItems(db),
    payments: sqlitePayments(db),
    ledger: sqliteLedger(db),
    reconcile: sqliteReconcile(db),
    search,
    webhooks: sqliteWebhooks(db, secrets),
    retention: sqliteRetention(db),
    async counts() {
      return { itemsByStatus: itemsByStatus.all(), unsettledByPhase: unsettledByPhase.all() };
    },
    async migrate() {
      const applied = migrateAndTidy(db, dbPath, options.sealer);
      await flusher.flushed();
      return applied;
    },
    schemaVersion: MIGRATIONS.at(-1)!.version,
    steps: {
      list: () => steps.list(),
      async run(runOptions) {
        const run = await steps.run(runOptions);
        await flusher.flushed();
        return run;
      },
    },
    // Not ready when the store's secrets are no longer under this process's key (rotated since it started).
    async ping() {
      const keyId = ping.get();
      if (!options.sealer.opens(keyId)) throw new SecretsKeyMismatchError(options.sealer.keyId, keyId);
    },
    async settings() {
      const synchronous = SYNCHRONOUS[db.pragma('synchronous', { simple: true }) as number] ?? 'unknown';
      return {
        journal_mode: String(db.pragma('journal_mode', { simple: true })),
        synchronous,
        wal_flush: dbPath === ':memory:' ? 'none' : 'before-answer',
      };
    },
    async close() {
      search.close();
      await flusher.close();
      db.close();
    },
  };
  const flushed = flushedStore(store, flusher);
  return options.waitUnblocked ? waitUnblocked(flushed, options.busyTimeoutMs ?? 10_000) : flushed;
}

/**
 * The flusher of the connection's log. Its mark moves with every commit the connection can see: its own
 * (`total_changes()`, which counts every row written) and other connections' (`PRAGMA data_version`).
 */
function openFlusher(db: Db, dbPath: string, options: SqliteStoreOptions): WalFlusher {
  if (dbPath === ':memory:') return { flushed: () => Promise.resolve(), close: () => Promise.resolve() };
  const ownChanges = db.prepare<[], number>('SELECT total_changes()').pluck();
  const dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck();
  let unread = 0;
  // SQLite's own name for the file, links resolved: its log sits beside the file a link points to, not the link.
  const main = dbFile(db) || path.resolve(dbPath);
  return walFlusher(`${main}-wal`, {
    // A mark that cannot be read (SQLITE_BUSY while another connection recovers the log) asks for a flush: it must
    // not fail an operation that has committed (wait-unblocked.ts would run it again).
    mark: () => {
      try {
        return `${ownChanges.get()}.${dataVersion.get()}`;
      } catch {
        return `unread ${++unread}`;
      }
    },
    onFailure: options.onFlushFailure ?? stopFlushFailed,
    fs: options.walFs,
  });
}

/** PRAGMA synchronous's values by number. */
const SYNCHRONOUS = ['off', 'normal', 'full', 'extra'];

function migrateAndTidy(db: Db, dbPath: string, sealer: Sealer): number[] {
  const applied = migrate(db, { sealer });
  // Orders of an older version (before migration 14, or still running beside this one) get their item count.
  backfillItemCounts(db);
  // The first write made the -wal and -shm: they must be as private as the file (older versions made 0644).
  restrictDbFiles(dbPath);
  if (applied.includes(SECRETS_MIGRATION.version)) truncateWal(db);
  incrementalVacuum(db);
  return applied;
}
