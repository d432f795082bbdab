// Raw SQL probe on a SQLite store file: its own better-sqlite3 connection, methods wrapped as promises so
// tests can treat both stores alike.
import Database from 'better-sqlite3';
import type { Probe } from './store.probe.js';

export function sqliteProbe(dbPath: string): Probe {
  const db = new Database(dbPath);
  db.pragma('busy_timeout = 10000');
  // Runs synchronously, but a throw becomes a rejection as for the asynchronous stores.
  const run = async <T>(fn: () => T): Promise<T> => fn();
  return {
    all: <T = Record<string, unknown>>(sql: string, ...params: unknown[]) =>
      run(() => db.prepare(sql).all(...params) as T[]),
    get: <T>(sql: string, ...params: unknown[]) => run(() => db.prepare(sql).get(...params) as T | undefined),
    scalar: <T = number>(sql: string, ...params: unknown[]) =>
      run(
        () =>
          db
            .prepare(sql)
            .pluck()
            .get(...params) as T,
      ),
    exec: (sql: string) =>
      run(() => {
        db.exec(sql);
      }),
    close: () =>
      run(() => {
        if (db.open) db.close();
      }),
  };
}
