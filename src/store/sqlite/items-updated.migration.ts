import type { SqliteMigration } from './sqlite.migrations.js';

/**
 * Each order keeps when one of its items was last updated (issue 41), so that a search by item update time counts
 * and reads ORDERS updated since its start, whatever their items: 9 late orders of 250 items each are 9 index
 * entries, not 2,250 (search-plan.ts, orderUpdateKey). Null while no item changed since acceptance (an item is
 * inserted with its order's created_at), so accepting an order writes only its entry of the index. The trigger
 * catches every path that moves an item's updated_at, present and future, and writes the order only when the time
 * grows: 250 items settled at once write the order row once, the other 249 read it. The backfill reads every item
 * once and the index every order: 4.8 s at 300,000 generated orders (937,000 items) on a loaded machine, so some
 * 15–20 s at 1,000,000, hence a step of `admin migrate`, a batch of orders a transaction (docs/operating.md).
 */
export const ITEMS_UPDATED_MIGRATION: SqliteMigration = {
  version: 15,
  name: 'orders keep the latest update time of their items: update-range searches read orders',
  // The release of 2026-11-27 reads an order's row and its items' as one row split by position.
  besideOlder: false,
  // The trigger keeps every order right from here on, whoever moves its items; the step fills the orders whose
  // items moved before.
  sql: `
    ALTER TABLE orders ADD COLUMN items_updated_at INTEGER;
    CREATE TRIGGER order_items_updated AFTER UPDATE OF updated_at ON order_items
      WHEN NEW.updated_at > OLD.updated_at
    BEGIN
      UPDATE orders SET items_updated_at = NEW.updated_at
       WHERE order_id = NEW.order_id AND coalesce(items_updated_at, created_at) < NEW.updated_at;
    END;
  `,
  step: {
    // A search by item update time would miss the orders not filled yet: processes wait for the step.
    servesBefore: false,
    batch(db, from, to) {
      db.prepare(
        `UPDATE orders SET items_updated_at = u.at
           FROM (SELECT order_id, max(updated_at) AS at FROM order_items
                  WHERE order_id > ? AND order_id <= ? GROUP BY order_id) u
          WHERE orders.order_id = u.order_id AND u.at > coalesce(orders.items_updated_at, orders.created_at)`,
      ).run(from, to);
    },
    finish(db) {
      db.exec(`CREATE INDEX IF NOT EXISTS orders_client_items_updated
        ON orders (client_id, coalesce(items_updated_at, created_at), created_at, order_id);`);
    },
  },
};
