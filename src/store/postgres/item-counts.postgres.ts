/**
 * An order's item count, which the backlog and the search pages read: kept on the order since migration 16,
 * null on an order an older version accepted.
 */
import type { Queryable } from './postgres.pool.js';

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
