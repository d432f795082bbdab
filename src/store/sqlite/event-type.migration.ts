import type { SqliteMigration } from './sqlite.migrations.js';

/** Each event names its type, so a new type is a new producer and body, not a new table or column. */
export const EVENT_TYPE_MIGRATION: SqliteMigration = {
  version: 10,
  name: 'order events carry their type',
  besideOlder: true,
  sql: `ALTER TABLE order_events ADD COLUMN type TEXT NOT NULL DEFAULT 'order.updated';`,
};
