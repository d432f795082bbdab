import type pg from 'pg';
import type {
  ItemMoveWrite,
  ItemMoveWriteResult,
  ItemStore,
  StoredItemWithCurrency,
} from '../port/store.port.js';
import { ITEM_COLUMNS, itemFields } from '../shared/item.columns.js';
import { writeAdjustment } from './ledger.postgres.js';
import { recordEvent } from './webhooks.postgres.js';
import { withTransaction } from './postgres.pool.js';
import { canBeId } from './postgres.rows.js';

// Compare-and-set on (status, status_changed_at) as the service read them; joining orders locks no order row.
// The order is written, and locked, only when the move is its items' latest update (items_updated_at) or records
// an event ($10 = 1): one UPDATE for both, its event's sequence counted there (recordEvent's first statement).
// The item's columns named (item.columns.ts), so its result type is fixed: prepared once per connection.
const MOVE_SQL = `
  WITH moved AS (
    UPDATE order_items i
       SET status = $2, updated_at = $4, status_changed_at = $4,
           shipcost_cents = i.shipcost_cents + $5,
           extra_shipping_cents = coalesce($6, i.extra_shipping_cents),
           shipping_company = coalesce($7, i.shipping_company),
           tracking_id = coalesce($8, i.tracking_id)
      FROM orders o
     WHERE i.order_item_id = $1 AND i.status = $3 AND i.status_changed_at = $9 AND o.order_id = i.order_id
    RETURNING ${itemFields('i')}, o.currency),
  latest AS (
    UPDATE orders o
       SET items_updated_at = CASE WHEN coalesce(o.items_updated_at, o.created_at) < m."updatedAt"
                                   THEN m."updatedAt" ELSE o.items_updated_at END,
           event_seq = o.event_seq + $10
      FROM moved m
     WHERE o.order_id = m."orderId" AND ($10 = 1 OR coalesce(o.items_updated_at, o.created_at) < m."updatedAt"))
  SELECT ${ITEM_COLUMNS.map(([, field]) => `m."${field}"`).join(', ')}, m.currency FROM moved m`;

/**
 * The setting by which a session says that its statements keep orders.items_updated_at themselves: the worker's
 * functions carry it (order-functions.ts), an item move sets it for its transaction; the row trigger of earlier
 * versions skips their statements (items-updated-net.migration.ts).
 */
export const SETS_ITEMS_UPDATED = 'bo.sets_items_updated_at';

// The move keeps its order's items_updated_at itself: the row trigger of earlier versions is off for it.
const BEGIN_MOVE = `BEGIN; SET LOCAL ${SETS_ITEMS_UPDATED} = on`;

const ITEM_SQL = `SELECT ${itemFields('i')}, o.currency FROM order_items i JOIN orders o ON o.order_id = i.order_id
  WHERE i.order_item_id = $1`;

const moveParams = (m: ItemMoveWrite): unknown[] => [
  m.orderItemId,
  m.to,
  m.from,
  m.now,
  m.addShipcostCents,
  m.extraShippingCents,
  m.shippingCompany,
  m.trackingId,
  m.fromChangedAt,
  m.event ? 1 : 0,
];

async function applyMoveIn(tx: pg.PoolClient, m: ItemMoveWrite): Promise<ItemMoveWriteResult> {
  const moved = (await tx.query<StoredItemWithCurrency>(MOVE_SQL, moveParams(m))).rows[0];
  if (!moved) return { kind: 'changed' };
  if (m.returnStockOf !== null) {
    await tx.query('UPDATE listings SET stock = stock + 1 WHERE listing_id = $1', [m.returnStockOf]);
  }
  const entryId = m.ledger ? await writeAdjustment(tx, m.ledger, m.now) : null;
  if (m.event) await recordEvent(tx, moved.orderId, m.event, m.now, { counted: true });
  return { kind: 'moved', item: moved, entryId };
}

/** Item moves as compare-and-set: status, stock, shipping cost and ledger change together or not at all. */
export function postgresItems(pool: pg.Pool): ItemStore {
  return {
    async getItem(orderItemId) {
      if (!canBeId(orderItemId)) return null;
      const { rows } = await pool.query<StoredItemWithCurrency>(ITEM_SQL, [orderItemId]);
      return rows[0] ?? null;
    },
    applyMove(m) {
      return withTransaction(pool, (tx) => applyMoveIn(tx, m), BEGIN_MOVE);
    },
  };
}
