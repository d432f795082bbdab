import type pg from 'pg';
import type {
  ReconcileStore,
  StaleItem,
  StaleItemKey,
  StaleOrder,
  StaleOrderKey,
} from '../port/store.port.js';

const START_ORDER: StaleOrderKey = { createdAt: Number.MIN_SAFE_INTEGER, orderId: 0 };
const START_ITEM: StaleItemKey = { statusChangedAt: Number.MIN_SAFE_INTEGER, orderItemId: 0 };

/**
 * Unsettled orders are exactly those with QUEUED items: a page of them by age is a range of the partial index
 * orders_unsettled (created_at, order_id), read in order (unsettled-apart.migration.ts).
 */
export const STALE_ORDERS_SQL = `
  SELECT order_id AS "orderId", attempts, created_at AS "createdAt" FROM orders
   WHERE NOT settled AND created_at < $1 AND (created_at, order_id) > ($2, $3)
   ORDER BY created_at, order_id LIMIT $4`;

// Served by order_items_status (status, status_changed_at).
const STALE_ITEMS_SQL = `
  SELECT order_item_id AS "orderItemId", order_id AS "orderId", status, status_changed_at AS "statusChangedAt"
    FROM order_items
   WHERE status = $1 AND status_changed_at < $2 AND (status_changed_at, order_item_id) > ($3, $4)
   ORDER BY status_changed_at, order_item_id LIMIT $5`;

// Served by the partial index orders_payment_pending.
const PENDING_SQL = `
  SELECT order_id AS "orderId" FROM orders
   WHERE payment_applied_version < payment_version AND order_id > $1
   ORDER BY order_id LIMIT $2`;

/** Read-only, batched queries for what reconciliation moves on; the moves go through the other stores. */
export function postgresReconcile(pool: pg.Pool): ReconcileStore {
  return {
    async staleOrders(createdBefore, limit, after = START_ORDER) {
      const params = [createdBefore, after.createdAt, after.orderId, limit];
      return (await pool.query<StaleOrder>(STALE_ORDERS_SQL, params)).rows;
    },
    async staleItems(status, changedBefore, limit, after = START_ITEM) {
      const params = [status, changedBefore, after.statusChangedAt, after.orderItemId, limit];
      return (await pool.query<StaleItem>(STALE_ITEMS_SQL, params)).rows;
    },
    async pendingPayments(limit, afterOrderId = 0) {
      const { rows } = await pool.query<{ orderId: number }>(PENDING_SQL, [afterOrderId, limit]);
      return rows.map((row) => row.orderId);
    },
  };
}
