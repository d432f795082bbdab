import type { Store } from '../store.port.js';
import { sqliteCatalog } from './catalog.sqlite.js';
import { sqliteClients } from './clients.sqlite.js';
import { sqliteItems } from './items.sqlite.js';
import { sqliteOrders } from './orders.sqlite.js';
import { sqlitePayments } from './payments.sqlite.js';
import { sqliteProcessing } from './processing.sqlite.js';
import { sqliteReconcile } from './reconcile.sqlite.js';
import { sqliteSearch, type SqliteSearchOptions } from './search.sqlite.js';
import { migrate, openDb } from './sqlite.db.js';

export interface SqliteStoreOptions extends SqliteSearchOptions {
  /** How long a statement waits for another process's write lock before failing (SQLITE_BUSY). */
  busyTimeoutMs?: number;
}

/**
 * The embedded store: one better-sqlite3 connection to the file at `dbPath`, migrated on open. Every
 * operation is one synchronous transaction (`BEGIN IMMEDIATE` where it reads then writes), so processes on
 * one host that share the file are serialised by SQLite's write lock.
 */
export async function openSqliteStore(dbPath: string, options: SqliteStoreOptions = {}): Promise<Store> {
  const db = openDb(dbPath, options.busyTimeoutMs);
  const itemsByStatus = db.prepare<[], { status: number; count: number }>(
    'SELECT status, count(*) AS count FROM order_items GROUP BY status',
  );
  // orders_unsettled is a partial index on exactly these rows.
  const unsettledByPhase = db.prepare<[], { phase: 'queued' | 'reserved'; count: number }>(
    "SELECT phase, count(*) AS count FROM orders WHERE phase <> 'settled' GROUP BY phase",
  );
  const ping = db.prepare('SELECT 1');
  return {
    kind: 'sqlite',
    clients: sqliteClients(db),
    catalog: sqliteCatalog(db),
    orders: sqliteOrders(db),
    processing: sqliteProcessing(db),
    items: sqliteItems(db),
    payments: sqlitePayments(db),
    reconcile: sqliteReconcile(db),
    search: sqliteSearch(db, options),
    async counts() {
      return { itemsByStatus: itemsByStatus.all(), unsettledByPhase: unsettledByPhase.all() };
    },
    async migrate() {
      return migrate(db);
    },
    async ping() {
      ping.get();
    },
    async close() {
      db.close();
    },
  };
}
