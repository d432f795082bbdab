import type { Db } from './sqlite.db.js';
import type { SqliteMigration } from './sqlite.migrations.js';

/**
 * The backlog counts items (issue 41): each order keeps how many items it was accepted with, written with the
 * order in its acceptance's transaction, and the partial index of unsettled orders by client carries it, so that
 * both backpressure figures (the service's, a client's) are sums over that index alone: a covering index, `phase`
 * last as SQLite reads the index's condition from the entry, the rowid (`order_id`) in every entry. Null on an
 * order accepted by an older version: the counts take its items from order_items instead, and
 * `backfillItemCounts` fills the unsettled ones after the migration, a batch per transaction (settled orders are
 * never counted: they keep null).
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

/** An order's items, from its item count or, accepted by an older version, from its item rows. */
export const ITEMS_OF_ORDER =
  'coalesce(o.item_count, (SELECT count(*) FROM order_items i WHERE i.order_id = o.order_id))';

/** Orders whose item count is filled in one transaction of the backfill. */
const BACKFILL_BATCH = 500;

/**
 * Fills the item count of unsettled orders accepted by an older version, BACKFILL_BATCH orders a transaction
 * (each a short write, so other processes of the file write between them); returns how many it filled.
 */
export function backfillItemCounts(db: Db): number {
  const fill = db.prepare(
    `UPDATE orders SET item_count = (SELECT count(*) FROM order_items i WHERE i.order_id = orders.order_id)
      WHERE order_id IN (SELECT order_id FROM orders WHERE phase <> 'settled' AND item_count IS NULL LIMIT ?)`,
  );
  let filled = 0;
  for (;;) {
    const { changes } = fill.run(BACKFILL_BATCH);
    filled += changes;
    if (changes < BACKFILL_BATCH) return filled;
  }
}
