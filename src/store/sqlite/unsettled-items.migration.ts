import type { SqliteMigration } from './sqlite.migrations.js';

/**
 * The backlog counts items, so that an order of many items weighs what as many one-item orders weigh: each
 * order keeps how many items it was accepted with, written with the order in its acceptance's transaction,
 * and the partial index of unsettled orders by client carries it, so that both backpressure figures (the
 * service's, a client's) are sums over that index alone: a covering index, `phase` last as SQLite reads the
 * index's condition from the entry, the rowid (`order_id`) in every entry. Null on an order accepted by an
 * older version: the counts take its items from order_items instead, and `backfillItemCounts`
 * (item-counts.sqlite.ts) fills the unsettled ones after the migration, a batch per transaction (settled
 * orders are never counted: they keep null).
 */
export const UNSETTLED_ITEMS_MIGRATION: SqliteMigration = {
  version: 14,
  name: 'orders keep their item count: the backlog counts items',
  // The release of 2026-11-27 reads an order's row and its items' as one row split by position: one more
  // column of orders shifts every item column it reads.
  besideOlder: false,
  sql: 'ALTER TABLE orders ADD COLUMN item_count INTEGER;',
  step: {
    // Until the index is rebuilt, the counts read the index of migration 9 and each order's row: right, slower.
    servesBefore: true,
    // Building a partial index reads the whole table under the write lock: an operator's step, not a start's.
    finish(db) {
      db.exec(`DROP INDEX IF EXISTS orders_unsettled_client;
        CREATE INDEX orders_unsettled_client ON orders (client_id, item_count, phase) WHERE phase <> 'settled';`);
    },
  },
};
