import type { Migration } from './postgres.migrations.js';

/**
 * The server settings the service wants, as defaults of its role in this database: every connection gets them,
 * through a pooler too (which refuses startup options), and only this role and database are changed. No parallel
 * workers: every query reads few rows by an index, and starting them costs more than they save (BENCHMARKS.md).
 */
export const SETTINGS_MIGRATION: Migration = {
  version: 8,
  name: 'server settings on the role in this database (no startup option, which a transaction pooler refuses)',
  sql: `
    DO $$
    BEGIN
      EXECUTE format('ALTER ROLE CURRENT_USER IN DATABASE %I SET max_parallel_workers_per_gather = 0',
                     current_database());
    END $$;
  `,
};
