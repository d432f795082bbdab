import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS } from './sqlite.migrations.js';

export type Db = Database.Database;

/** Opens the one connection of a process: WAL, foreign keys, a busy timeout, and every migration applied. */
export function openDb(dbPath: string, busyTimeoutMs = 10_000): Db {
  if (dbPath !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(dbPath)), { recursive: true });
  const db = new Database(dbPath);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma(`busy_timeout = ${Math.trunc(busyTimeoutMs)}`);
  migrate(db);
  return db;
}

/** Applies the migrations this file has not seen yet; safe when several processes start at once. */
export function migrate(db: Db): number[] {
  const applied: number[] = [];
  db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
    const done = new Set(
      db
        .prepare('SELECT version FROM schema_migrations')
        .pluck()
        .all()
        .map((v) => Number(v)),
    );
    for (const migration of MIGRATIONS) {
      if (done.has(migration.version)) continue;
      db.exec(migration.sql);
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
