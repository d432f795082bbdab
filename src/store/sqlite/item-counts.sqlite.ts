/**
 * An order's item count, which the backlog and the search pages read: kept on the order since migration 14,
 * null on an order an older version accepted.
 */
import type { Db } from './sqlite.db.js';

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
