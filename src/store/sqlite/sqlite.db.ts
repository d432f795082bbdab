import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { restrictToOwner, touchPrivateFile } from '../secrets/private-files.js';
import type { MigrationContext } from '../secrets/store-secrets.js';
import type { PendingMigration } from '../port/migrations.port.js';
import { MIGRATION_STEPS_TABLE, recordStep } from './migration-steps.sqlite.js';
import { MIGRATIONS } from './sqlite.migrations.js';

export type Db = Database.Database;

/**
 * Opens the one connection of a process: WAL, foreign keys, a busy timeout. The file holds secrets: it is
 * created 0600 (SQLite gives its -wal and -shm the file's mode) in a folder created 0700.
 *
 * `synchronous = NORMAL`: a commit writes the write-ahead log and returns without flushing it; the store answers
 * for a commit only once an fdatasync of the log that began after it has returned, on libuv's thread pool
 * (wal-flusher.ts, flushed-store.ts): whatever the service has answered survives a power cut or a crash of the
 * operating system, not only of the process, and the event loop never waits for the disk. A connection opened
 * here without that store (a script, a test's probe) flushes only at checkpoints.
 */
export function openDb(dbPath: string, busyTimeoutMs = 10_000): Db {
  if (dbPath !== ':memory:') {
    touchPrivateFile(path.resolve(dbPath));
    restrictDbFiles(dbPath);
  }
  const db = new Database(dbPath);
  // A new file keeps its free pages apart, for retention to give back (incrementalVacuum converts an old one).
  db.pragma('auto_vacuum = INCREMENTAL');
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma(`busy_timeout = ${Math.trunc(busyTimeoutMs)}`);
  // A row rewritten in place (a sealed secret, a rotation) leaves no copy of its old bytes in the page.
  db.pragma('secure_delete = FAST');
  return db;
}

/**
 * Narrows the database file and its -wal/-shm to 0600 where they exist wider (older versions made 0644). SQLite
 * keeps the -wal and -shm beside the file a link points to, not beside the link: the path is resolved first.
 */
export function restrictDbFiles(dbPath: string): void {
  if (dbPath === ':memory:') return;
  const file = realPath(dbPath);
  for (const each of [file, `${file}-wal`, `${file}-shm`]) restrictToOwner(each);
}

/** SQLite's own name for the connection's main file, links resolved; '' for a `:memory:` or temporary one. */
export function dbFile(db: Db): string {
  const databases = db.pragma('database_list') as { name: string; file: string }[];
  return databases.find((entry) => entry.name === 'main')?.file ?? '';
}

const realPath = (file: string): string => {
  try {
    return fs.realpathSync(file);
  } catch {
    return file; // not there yet: nothing to narrow
  }
};

/**
 * The migrations this file has not seen yet, with whether processes that do not know them may run beside them;
 * none on a file that holds no schema yet (nothing can be running on it).
 */
export function pendingMigrations(db: Db, migrations = MIGRATIONS): PendingMigration[] {
  const known = db
    .prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
    .pluck()
    .get() as number;
  if (known === 0) return [];
  const done = new Set(
    db
      .prepare('SELECT version FROM schema_migrations')
      .pluck()
      .all()
      .map((v) => Number(v)),
  );
  if (done.size === 0) return [];
  return migrations
    .filter((m) => !done.has(m.version))
    .map(({ version, name, besideOlder }) => ({ version, name, besideOlder }));
}

/**
 * Applies the migrations this file has not seen yet, in one `BEGIN IMMEDIATE` transaction: safe when
 * several processes start at once. A migration may run code (`run`) besides its SQL. A migration's step is
 * recorded in `migration_steps` for `admin migrate`, or done at once when no order exists yet.
 */
export function migrate(db: Db, ctx: MigrationContext, migrations = MIGRATIONS): number[] {
  const applied: number[] = [];
  db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
    db.exec(MIGRATION_STEPS_TABLE);
    const done = new Set(
      db
        .prepare('SELECT version FROM schema_migrations')
        .pluck()
        .all()
        .map((v) => Number(v)),
    );
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      if (migration.sql) db.exec(migration.sql);
      migration.run?.(db, ctx);
      if (migration.step) recordStep(db, migration.version, migration.name, migration.step);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        migration.version,
        migration.name,
        Date.now(),
      );
      applied.push(migration.version);
    }
  }).immediate();
  return applied;
}

const INCREMENTAL = 2;

/**
 * Makes a file made before retention (auto_vacuum NONE) give space back: auto_vacuum = INCREMENTAL takes a VACUUM,
 * a rewrite of the whole file that holds the write lock meanwhile (about a second per 100 MB), once. Free pages
 * are then kept apart, reused by new rows, and retention returns them to the file system a few at a time.
 */
export function incrementalVacuum(db: Db): void {
  if (db.pragma('auto_vacuum', { simple: true }) === INCREMENTAL) return;
  db.pragma('auto_vacuum = INCREMENTAL');
  db.exec('VACUUM');
}

/** Empties the WAL, whose older frames may hold what a rewrite replaced: clear tokens, old sealed keys. */
export function truncateWal(db: Db): void {
  db.pragma('wal_checkpoint(TRUNCATE)');
}
