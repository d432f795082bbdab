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
