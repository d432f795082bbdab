import type { SqliteMigration } from './sqlite.migrations.js';

/**
 * Indexes chosen for the search endpoint's filters, and the table of issued paging cursors.
 * Each index serves one driver of `order-search.repository.ts`; the plan tests pin which one each uses.
 */
export const SEARCH_MIGRATION: SqliteMigration = {
  version: 2,
  name: 'search indexes and paging cursors',
  besideOlder: true,
  sql: `
    -- Replaced by order_items_search_updated, which also filters the order date inside the index.
    DROP INDEX order_items_client_updated;

    -- Items updated in a narrow range: read that range, keep those in the order-date window, sort what is left.
    CREATE INDEX order_items_search_updated ON order_items (client_id, updated_at, order_created_at, order_id);

    -- Items in order-date order with their update time: a wide update range scans this and stops at the limit.
    CREATE INDEX order_items_search_created ON order_items (client_id, order_created_at, order_id, updated_at);

    -- One row per metadata.next handed out; the integer a client sees is cursor_id, random so it reveals nothing.
    CREATE TABLE search_cursors (
      cursor_id         INTEGER PRIMARY KEY,
      client_id         INTEGER NOT NULL,
      criteria_hash     TEXT    NOT NULL,
      date_start        INTEGER NOT NULL,
      date_end          INTEGER NOT NULL,
      after_created_at  INTEGER NOT NULL,
      after_order_id    INTEGER NOT NULL,
      created_at        INTEGER NOT NULL
    );
    CREATE INDEX search_cursors_created ON search_cursors (created_at);
  `,
};
