import type {
  ReconcileStore,
  StaleItem,
  StaleItemKey,
  StaleOrder,
  StaleOrderKey,
} from '../port/store.port.js';
import type { Db } from './sqlite.db.js';

const START_ORDER: StaleOrderKey = { createdAt: Number.MIN_SAFE_INTEGER, orderId: 0 };
const START_ITEM: StaleItemKey = { statusChangedAt: Number.MIN_SAFE_INTEGER, orderItemId: 0 };

/**
 * Unsettled orders are exactly those with QUEUED items: a page of them by age is a range of the partial index
 * orders_unsettled (created_at, order_id, phase), read in order (unsettled-by-age.migration.ts).
 */
export const STALE_ORDERS_SQL = `SELECT order_id AS orderId, attempts, created_at AS createdAt FROM orders
      WHERE phase <> 'settled' AND created_at < ? AND (created_at, order_id) > (?, ?)
      ORDER BY created_at, order_id LIMIT ?`;

/** Read-only, batched queries for what reconciliation moves on; the moves go through the other stores. */
export function sqliteReconcile(db: Db): ReconcileStore {
  const staleOrders = db.prepare<[number, number, number, number], StaleOrder>(STALE_ORDERS_SQL);
  // Served by order_items_status (status, status_changed_at).
  const staleItems = db.prepare<[number, number, number, number, number], StaleItem>(
    `SELECT order_item_id AS orderItemId, order_id AS orderId, status, status_changed_at AS statusChangedAt
       FROM order_items
      WHERE status = ? AND status_changed_at < ? AND (status_changed_at, order_item_id) > (?, ?)
      ORDER BY status_changed_at, order_item_id LIMIT ?`,
  );
  // Served by the partial index orders_payment_pending.
  const pending = db.prepare<[number, number], { orderId: number }>(
    `SELECT order_id AS orderId FROM orders
      WHERE payment_applied_version < payment_version AND order_id > ?
      ORDER BY order_id LIMIT ?`,
  );

  return {
    async staleOrders(createdBefore, limit, after = START_ORDER) {
      return staleOrders.all(createdBefore, after.createdAt, after.orderId, limit);
    },
    async staleItems(status, changedBefore, limit, after = START_ITEM) {
      return staleItems.all(status, changedBefore, after.statusChangedAt, after.orderItemId, limit);
    },
    async pendingPayments(limit, afterOrderId = 0) {
      return pending.all(afterOrderId, limit).map((row) => row.orderId);
    },
  };
}
