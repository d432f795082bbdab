import type { Migration } from './postgres.migrations.js';

/**
 * The server settings the service wants, as defaults of its role in its database: every connection gets them when
 * it starts, whoever opens it (the service, or a pooler in front of the server), at no cost per transaction. Until
 * now they were a startup option, which a transaction pooler refuses. On the role in this database rather than on
 * the database (ALTER DATABASE): any role may set its own defaults, while only the database's owner may set the
 * database's; and a person's psql under another role, or another database on the server, is left as it is.
 * Every query of the service reads few rows by an index: starting parallel workers costs more (5–7 ms on a
 * search's p95) than it could save.
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
