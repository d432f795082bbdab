import type { SqliteMigration } from './sqlite.migrations.js';

/** The trace of the change that recorded an event (tracing on), so that its deliveries continue that trace. */
export const TRACE_CONTEXT_MIGRATION: SqliteMigration = {
  version: 11,
  name: 'order events keep the trace of their change',
  besideOlder: true,
  sql: `ALTER TABLE order_events ADD COLUMN trace_context TEXT;`,
};
