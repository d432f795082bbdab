import type { ItemStatusCode, LedgerKind } from '../domain/item-status.js';
import type { Db } from './db.js';
import { adjustmentDelta, type PendingAdjustment } from './item.repository.js';

export interface StaleOrder {
  orderId: number;
  attempts: number;
  createdAt: number;
}

export interface StaleItem {
  orderItemId: number;
  status: ItemStatusCode;
  statusChangedAt: number;
}

/** Where the previous batch ended; batches are keyset-paged so a row that stays put is never read twice. */
export interface OrderKey {
  createdAt: number;
  orderId: number;
}
export interface ItemKey {
  statusChangedAt: number;
  orderItemId: number;
}

export type ReconcileRepository = ReturnType<typeof createReconcileRepository>;

const START_ORDER: OrderKey = { createdAt: Number.MIN_SAFE_INTEGER, orderId: 0 };
const START_ITEM: ItemKey = { statusChangedAt: Number.MIN_SAFE_INTEGER, orderItemId: 0 };

/** Read-only, batched queries for what reconciliation moves on; the moves go through the repositories. */
export function createReconcileRepository(db: Db) {
  // Unsettled orders are exactly those with QUEUED items; served by the partial index orders_unsettled.
  const staleOrders = db.prepare<[number, number, number, number], StaleOrder>(
    `SELECT order_id AS orderId, attempts, created_at AS createdAt FROM orders
      WHERE phase <> 'settled' AND created_at < ? AND (created_at, order_id) > (?, ?)
      ORDER BY created_at, order_id LIMIT ?`,
  );
  // Served by order_items_status (status, status_changed_at).
  const staleItems = db.prepare<[number, number, number, number, number], StaleItem>(
    `SELECT order_item_id AS orderItemId, status, status_changed_at AS statusChangedAt FROM order_items
      WHERE status = ? AND status_changed_at < ? AND (status_changed_at, order_item_id) > (?, ?)
      ORDER BY status_changed_at, order_item_id LIMIT ?`,
  );
  const pending = db.prepare<[number, number], Omit<PendingAdjustment, 'deltaCents'> & { amount: number }>(
    `SELECT entry_id AS entryId, entry_key AS entryKey, order_id AS orderId, kind, amount_cents AS amount
       FROM ledger_entries
      WHERE applied_at IS NULL AND kind IN ('void', 'extra_shipping', 'refund') AND entry_id > ?
      ORDER BY entry_id LIMIT ?`,
  );

  return {
    /** Orders accepted before `createdBefore` that still have QUEUED items, oldest first. */
    staleOrders(createdBefore: number, limit: number, after: OrderKey = START_ORDER): StaleOrder[] {
      return staleOrders.all(createdBefore, after.createdAt, after.orderId, limit);
    },
    /** Items in `status` since before `changedBefore`, longest waiting first. */
    staleItems(
      status: ItemStatusCode,
      changedBefore: number,
      limit: number,
      after: ItemKey = START_ITEM,
    ): StaleItem[] {
      return staleItems.all(status, changedBefore, after.statusChangedAt, after.orderItemId, limit);
    },
    /** Ledger entries whose gateway adjustment has not been applied yet, in the order they were written. */
    pendingAdjustments(limit: number, afterEntryId = 0): PendingAdjustment[] {
      return pending.all(afterEntryId, limit).map(({ amount, ...entry }) => ({
        ...entry,
        kind: entry.kind as LedgerKind,
        deltaCents: adjustmentDelta(entry.kind as LedgerKind, amount),
      }));
    },
  };
}
