import type { Migration } from './postgres.migrations.js';

/**
 * Each order keeps when one of its items was last updated (issue 41), so that a search by item update time counts
 * and reads ORDERS updated since its start, whatever their items: 9 late orders of 250 items each are 9 index
 * entries, not 2,250 (search-plan.ts, orderUpdateKey). Null while no item changed since acceptance (an item is
 * inserted with its order's created_at), so accepting an order writes only its entry of the index, and adding the
 * column is instant. A row trigger catches every path that moves an item's updated_at (since migration 19 only the
 * paths of earlier versions: items-updated-net.migration.ts); its WHEN is tested without calling the function, so a
 * statement that leaves updated_at alone (a reservation's prices) does not call it, and the order is written only
 * when the time grows: 250 items settled at once write it once, and not at all when the settlement's own update of
 * the order has set it (order-functions.ts, SETTLE_ORDER). The backfill is a step of `admin migrate`, a batch of
 * orders a transaction; the index is migration 20's step (docs/operating.md, Releases side by side).
 */
export const ITEMS_UPDATED_MIGRATION: Migration = {
  version: 17,
  name: 'orders keep the latest update time of their items: update-range searches read orders',
  // Earlier processes never read the column, and the trigger keeps it right for their writes too.
  besideOlder: true,
  // The trigger keeps every order right from here on; the step fills the orders whose items moved before, and
  // migration 20's step builds the index.
  sql: `
    ALTER TABLE orders ADD COLUMN items_updated_at BIGINT;
    CREATE FUNCTION bo_order_items_updated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE orders SET items_updated_at = NEW.updated_at
       WHERE order_id = NEW.order_id AND coalesce(items_updated_at, created_at) < NEW.updated_at;
      RETURN NULL;
    END $$;
    CREATE TRIGGER order_items_updated AFTER UPDATE OF updated_at ON order_items
      FOR EACH ROW WHEN (NEW.updated_at > OLD.updated_at) EXECUTE FUNCTION bo_order_items_updated();
  `,
  step: {
    // A search by item update time would miss the orders not filled yet: processes wait for the step.
    servesBefore: false,
    async batch(q, from, to) {
      await q.query(
        `UPDATE orders o SET items_updated_at = u.at
           FROM (SELECT order_id, max(updated_at) AS at FROM order_items
                  WHERE order_id > $1 AND order_id <= $2 GROUP BY order_id) u
          WHERE o.order_id = u.order_id AND u.at > coalesce(o.items_updated_at, o.created_at)`,
        [from, to],
      );
    },
  },
};
