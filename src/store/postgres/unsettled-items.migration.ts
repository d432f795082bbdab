import type { Queryable } from './postgres.pool.js';
import { buildAndSwapIndex } from './index-swap.js';
import type { Migration } from './postgres.migrations.js';

/**
 * The backlog counts items (issue 41): each order keeps how many items it was accepted with, written by its
 * acceptance's statement, and the partial index of unsettled orders by client carries it (`INCLUDE`), so that
 * both backpressure figures (the service's, a client's) are sums over that index alone (index-only scans);
 * `order_id` in it lets an order without a count find its items. Null on an order accepted by an older version:
 * the counts take its items from order_items instead, and `backfillItemCounts` fills the unsettled ones after
 * the migration, a batch per statement (settled orders are never counted: they keep null). Adding a column
 * without a default is instant; the index, a scan of `orders`, is a step of `admin migrate`, built CONCURRENTLY. The count
 * never changes after acceptance, so a reservation's update stays heap-only (unsettled-apart.migration.ts).
 */
export const UNSETTLED_ITEMS_MIGRATION: Migration = {
  version: 16,
  name: 'orders keep their item count: the backlog counts items',
  // Earlier processes read orders by name: a new column is invisible to them, and they accept orders without a
  // count, whose items the counts read from order_items.
  besideOlder: true,
  sql: 'ALTER TABLE orders ADD COLUMN item_count INTEGER;',
  step: {
    // Until the index is rebuilt, the counts read the index of migration 14 and each order's row: right, slower.
    servesBefore: true,
    finish: (q, concurrently) =>
      buildAndSwapIndex(
        q,
        {
          target: 'orders_unsettled_client',
          temp: 'orders_unsettled_client_items',
          on: 'ON orders (client_id) INCLUDE (order_id, item_count) WHERE NOT settled',
        },
        concurrently,
      ),
  },
};

/** An order's items, from its item count or, accepted by an older version, from its item rows. */
export const ITEMS_OF_ORDER =
  'coalesce(o.item_count, (SELECT count(*)::int FROM order_items i WHERE i.order_id = o.order_id))';

/** Orders whose item count is filled by one statement of the backfill. */
const BACKFILL_BATCH = 500;

/**
 * Fills the item count of unsettled orders accepted by an older version, BACKFILL_BATCH orders a statement (its
 * own transaction), skipping those another transaction holds (the counts read their items meanwhile); returns
 * how many it filled.
 */
export async function backfillItemCounts(db: Queryable): Promise<number> {
  let filled = 0;
  for (;;) {
    const { rowCount } = await db.query(
      `UPDATE orders o SET item_count = (SELECT count(*) FROM order_items i WHERE i.order_id = o.order_id)
        WHERE o.order_id IN (SELECT order_id FROM orders WHERE NOT settled AND item_count IS NULL
                              LIMIT $1 FOR UPDATE SKIP LOCKED)`,
      [BACKFILL_BATCH],
    );
    filled += rowCount ?? 0;
    if ((rowCount ?? 0) < BACKFILL_BATCH) return filled;
  }
}
