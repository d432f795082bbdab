import type pg from 'pg';
import type { Migration } from './postgres.migrations.js';

/**
 * The server settings the service wants, as defaults of its role in this database: every connection gets them,
 * through a pooler too (which refuses startup options), and only this role and database are changed. No parallel
 * workers: every query reads few rows by an index, and starting them costs more than they save (BENCHMARKS.md).
 */
export const SETTINGS_MIGRATION: Migration = {
  version: 8,
  name: 'server settings on the role in this database (no startup option, which a transaction pooler refuses)',
  besideOlder: true,
  sql: `
    DO $$
    BEGIN
      EXECUTE format('ALTER ROLE CURRENT_USER IN DATABASE %I SET max_parallel_workers_per_gather = 0',
                     current_database());
    END $$;
  `,
};

/**
 * A session that has left a transaction open without a statement for 10 s is ended by the server (its
 * transaction rolled back, its row locks freed): a process cut off mid-transaction (a frozen link, a paused
 * host) would otherwise hold its locks until TCP gives up on it, for hours. The service's transactions run only
 * their own statements, back to back (postgres.pool.ts, withTransaction).
 */
export const IDLE_TRANSACTION_MIGRATION: Migration = {
  version: 15,
  name: 'idle_in_transaction_session_timeout on the role in this database',
  besideOlder: true,
  sql: `
    DO $$
    BEGIN
      EXECUTE format('ALTER ROLE CURRENT_USER IN DATABASE %I SET idle_in_transaction_session_timeout = %L',
                     current_database(), '10s');
    END $$;
  `,
};

/**
 * No JIT compilation of a statement's expressions. The server compiles a statement whose plan's estimated cost
 * passes `jit_above_cost` (100,000), and the service's statements read few rows by an index, so compiling costs
 * far more than it can save: the count of unsettled orders behind backpressure, once a second, crossed that
 * estimate under a few thousand orders, and took ~8 ms of the server's CPU at each call compiling 143 functions
 * (LLVM), where running it takes under a millisecond (scripts/bench/order-budget.ts, pg_stat_statements' jit_*).
 */
export const JIT_MIGRATION: Migration = {
  version: 22,
  name: 'jit off on the role in this database',
  besideOlder: true,
  sql: `
    DO $$
    BEGIN
      EXECUTE format('ALTER ROLE CURRENT_USER IN DATABASE %I SET jit = off', current_database());
    END $$;
  `,
};

/** The migrations above, each setting one of ROLE_SETTINGS. */
export const ROLE_SETTING_MIGRATIONS: readonly Migration[] = [
  SETTINGS_MIGRATION,
  IDLE_TRANSACTION_MIGRATION,
  JIT_MIGRATION,
];

/** The role settings of the migrations above, as pg_db_role_setting keeps them. */
const ROLE_SETTINGS: Record<string, string> = {
  max_parallel_workers_per_gather: '0',
  idle_in_transaction_session_timeout: '10s',
  jit: 'off',
};

/**
 * Sets again on the role in this database whichever of ROLE_SETTINGS is missing or other: a database restored
 * from `pg_dump` (without `--create`, or into another role) has the service's tables and their migrations but not
 * these, which belong to the role, not the database. Run at every migrate, under its lock; writes nothing when
 * they hold. Connections opened from then on get them.
 */
export async function reapplyRoleSettings(tx: pg.ClientBase): Promise<string[]> {
  const { rows } = await tx.query<{ setting: string }>(
    `SELECT unnest(s.setconfig) AS setting FROM pg_db_role_setting s
       JOIN pg_database d ON d.oid = s.setdatabase
      WHERE d.datname = current_database() AND s.setrole = (SELECT oid FROM pg_roles WHERE rolname = current_user)`,
  );
  const held = new Set(rows.map((row) => row.setting));
  const missing = Object.entries(ROLE_SETTINGS).filter(([name, value]) => !held.has(`${name}=${value}`));
  for (const [name, value] of missing) {
    await tx.query(`DO $$
      BEGIN
        EXECUTE format('ALTER ROLE CURRENT_USER IN DATABASE %I SET ${name} = %L', current_database(), '${value}');
      END $$;`);
  }
  return missing.map(([name]) => name);
}
