import {
  isItemStatus,
  ledgerKindOf,
  updateMoves,
  type ItemStatusCode,
  type LedgerKind,
} from '../domain/item-status.js';
import type { Db } from './db.js';
import type { OrderItemRow } from './order.rows.js';

export interface ItemMove {
  orderItemId: number;
  to: ItemStatusCode;
  now: number;
  /** Set on 35 (SHIPPED); a value left out keeps what is stored. */
  shippingCompany?: string;
  trackingId?: string;
  /** Required on 93 (EXTRA_SHIPPING_REQUESTED): the amount the seller asks for, in the order's currency. */
  extraShippingCents?: number;
  /** Reconciliation's guard: move only an item still in `from` since before `changedBefore`. */
  expect?: { from: ItemStatusCode; changedBefore: number };
}

/** A ledger entry whose gateway adjustment is still to be applied: the outbox row. */
export interface PendingAdjustment {
  entryId: number;
  entryKey: string;
  orderId: number;
  kind: LedgerKind;
  /** Signed change of the authorisation: negative for void and refund, positive for extra shipping. */
  deltaCents: number;
}

export type ItemMoveResult =
  | { kind: 'moved'; from: ItemStatusCode; item: OrderItemRow; adjustment: PendingAdjustment | null }
  | { kind: 'refused'; item: OrderItemRow; allowed: readonly ItemStatusCode[] }
  | { kind: 'missing' }
  | { kind: 'unexpected'; item: OrderItemRow };

type ItemWithCurrency = OrderItemRow & { currency: string };

export type ItemRepository = ReturnType<typeof createItemRepository>;

/** The item's share of its order's payment: what voiding or refunding it gives back. */
export const shareOf = (item: OrderItemRow): number => item.cost_cents + item.shipcost_cents + item.tax_cents;

/** How an entry changes the authorisation: extra shipping adds to it, a void or a refund gives back. */
export const adjustmentDelta = (kind: LedgerKind, amountCents: number): number =>
  kind === 'extra_shipping' ? amountCents : -amountCents;

/** Atomic item moves: status, stock, shipping cost and ledger change together or not at all. */
export function createItemRepository(db: Db) {
  const itemById = db.prepare<[number], ItemWithCurrency>(
    `SELECT i.*, o.currency FROM order_items i JOIN orders o ON o.order_id = i.order_id
      WHERE i.order_item_id = ?`,
  );
  const updateItem = db.prepare(
    `UPDATE order_items
        SET status = @to, updated_at = @now, status_changed_at = @now,
            shipcost_cents = shipcost_cents + @addShipcost,
            extra_shipping_cents = coalesce(@extraShipping, extra_shipping_cents),
            shipping_company = coalesce(@company, shipping_company),
            tracking_id = coalesce(@tracking, tracking_id)
      WHERE order_item_id = @id AND status = @from`,
  );
  const returnStock = db.prepare('UPDATE listings SET stock = stock + 1 WHERE listing_id = ?');
  const insertEntry = db.prepare<unknown[], { entry_id: number }>(
    `INSERT INTO ledger_entries (entry_key, order_id, order_item_id, kind, amount_cents, currency, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (entry_key) DO NOTHING RETURNING entry_id`,
  );
  const markApplied = db.prepare(
    'UPDATE ledger_entries SET applied_at = ? WHERE entry_key = ? AND applied_at IS NULL',
  );

  function record(item: ItemWithCurrency, kind: LedgerKind, now: number): PendingAdjustment | null {
    const amount = kind === 'extra_shipping' ? (item.extra_shipping_cents ?? 0) : shareOf(item);
    const entryKey = `${kind}:item-${item.order_item_id}`;
    const row = insertEntry.get(
      entryKey,
      item.order_id,
      item.order_item_id,
      kind,
      amount,
      item.currency,
      now,
    );
    if (!row) return null;
    const deltaCents = adjustmentDelta(kind, amount);
    return { entryId: row.entry_id, entryKey, orderId: item.order_id, kind, deltaCents };
  }

  const move = db.transaction((m: ItemMove): ItemMoveResult => {
    const item = itemById.get(m.orderItemId);
    if (!item) return { kind: 'missing' };
    const from = item.status as ItemStatusCode;
    if (m.expect && (from !== m.expect.from || item.status_changed_at >= m.expect.changedBefore))
      return { kind: 'unexpected', item };
    const allowed = isItemStatus(from) ? updateMoves(from) : [];
    if (!allowed.includes(m.to)) return { kind: 'refused', item, allowed };
    const ledgerKind = ledgerKindOf(from, m.to);
    const updated = updateItem.run({
      id: item.order_item_id,
      from,
      to: m.to,
      now: m.now,
      addShipcost: ledgerKind === 'extra_shipping' ? (item.extra_shipping_cents ?? 0) : 0,
      extraShipping: m.extraShippingCents ?? null,
      company: m.shippingCompany ?? null,
      tracking: m.trackingId ?? null,
    });
    // Cannot miss inside an immediate transaction; the guard is there should this ever run without one.
    if (updated.changes !== 1) return { kind: 'unexpected', item };
    if (ledgerKind === 'void') returnStock.run(item.listing_id);
    // Recorded from the row as it was before the move, so a void gives back what the item had cost.
    const adjustment = ledgerKind ? record(item, ledgerKind, m.now) : null;
    return { kind: 'moved', from, item: itemById.get(item.order_item_id)!, adjustment };
  });

  return {
    /**
     * Moves one item if the transition table allows it from the status it has inside the transaction;
     * never holds the transaction across an await, so the gateway is told after the commit.
     */
    move(m: ItemMove): Promise<ItemMoveResult> {
      return Promise.resolve(move.immediate(m));
    },
    /** Marks an adjustment applied at the gateway; false when it already was. */
    markApplied(entryKey: string, now: number): Promise<boolean> {
      return Promise.resolve(markApplied.run(now, entryKey).changes === 1);
    },
  };
}
