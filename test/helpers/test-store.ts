// Which store the current vitest project tests (TEST_STORE, set per project in vitest.config.ts), a private
// database for one test service on it, and a raw-SQL probe on that database. With TEST_POOLER=pgbouncer (project
// "pgbouncer") the database is reached through the run's PgBouncer in transaction mode.
import crypto from 'node:crypto';
import path from 'node:path';
import { inject } from 'vitest';
import { createDatabase, databaseUrl, dropDatabase } from '../../scripts/postgres.js';
import { postgresProbe } from './postgres.probe.js';
import { sqliteProbe } from './sqlite.probe.js';
import type { Probe } from './store.probe.js';

export type TestStoreKind = 'sqlite' | 'postgres';

function storeFromEnv(value: string | undefined): TestStoreKind {
  if (value === undefined || value === '' || value === 'sqlite') return 'sqlite';
  if (value === 'postgres') return 'postgres';
  throw new Error(`TEST_STORE must be 'sqlite' or 'postgres', not '${value}'`);
}

export const TEST_STORE: TestStoreKind = storeFromEnv(process.env.TEST_STORE);

/** Whether this project's PostgreSQL databases are reached through the run's PgBouncer (transaction mode). */
export const THROUGH_PGBOUNCER = process.env.TEST_POOLER === 'pgbouncer';

export interface TestStoreEnv {
  /** DB_PATH, plus DATABASE_URL and SECRETS_KEY on PostgreSQL: merge into the service's environment. */
  env: Record<string, string>;
  /** Drops the private database (PostgreSQL); the SQLite file goes with the test's directory. */
  drop(): Promise<void>;
}

/** A fresh, private store for one test service whose files live in `dir`. */
export async function testStoreEnv(dir: string): Promise<TestStoreEnv> {
  const dbPath = path.join(dir, 'orders.db');
  if (TEST_STORE === 'sqlite') {
    return { env: { DB_PATH: dbPath }, drop: () => Promise.resolve() };
  }
  const serverUrl = inject('postgresUrl');
  if (!serverUrl) {
    throw new Error(
      'TEST_STORE=postgres but no PostgreSQL server was provided: run through vitest.config.ts (project "postgres")',
    );
  }
  const name = `t_${crypto.randomBytes(8).toString('hex')}`;
  const direct = await createDatabase(serverUrl, name);
  const pooled = THROUGH_PGBOUNCER ? pgbouncerUrl(name) : undefined;
  let dropped = false;
  return {
    // SECRETS_KEY is required with DATABASE_URL; on SQLite the service generates secrets.key next to DB_PATH.
    env: {
      DATABASE_URL: pooled ?? direct,
      ...(pooled ? { DATABASE_POOLING: 'transaction' } : {}),
      DB_PATH: dbPath,
      SECRETS_KEY: crypto.randomBytes(32).toString('hex'),
    },
    drop: async () => {
      if (dropped) return;
      dropped = true;
      await dropDatabase(serverUrl, name);
    },
  };
}

/** The URL of database `name` through the run's PgBouncer. */
function pgbouncerUrl(name: string): string {
  const url = inject('pgbouncerUrl');
  if (!url)
    throw new Error(
      'TEST_POOLER=pgbouncer but no PgBouncer was started: run through vitest.config.ts (project "pgbouncer")',
    );
  return databaseUrl(url, name);
}

/** A raw-SQL probe on the store that `env` (from testStoreEnv) selects. Close it when done. */
export function openProbe(env: Record<string, string | undefined>): Probe {
  if (env.DATABASE_URL) return postgresProbe(env.DATABASE_URL);
  if (!env.DB_PATH) throw new Error('openProbe: the environment has neither DATABASE_URL nor DB_PATH');
  return sqliteProbe(env.DB_PATH);
}
