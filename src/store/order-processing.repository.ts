import { canMove, ItemStatus, type ItemStatusCode } from '../domain/item-status.js';
import { paymentKey } from '../payments/payment-gateway.js';
import type { PricingResult } from '../domain/pricing.js';
import type { CatalogRepository, PricingCatalog } from './catalog.repository.js';
import type { Db } from './db.js';
import type { OrderItemRow, OrderRow } from './order.rows.js';

/** What a worker's attempt has to do next, decided in one transaction. */
export type AttemptStep =
  | { kind: 'missing' }
  | { kind: 'settled' }
  | { kind: 'exhausted'; cardId: number }
  | { kind: 'pay'; cardId: number; amountCents: number; currency: string };

export type PriceStoredOrder = (
  order: OrderRow,
  items: OrderItemRow[],
  catalog: PricingCatalog,
) => PricingResult;

export type OrderProcessingRepository = ReturnType<typeof createOrderProcessingRepository>;

/** The worker's atomic steps: begin an attempt (price and reserve), settle the payment's outcome, give up. */
export function createOrderProcessingRepository(db: Db, catalog: CatalogRepository) {
  const orderById = db.prepare<[number], OrderRow>('SELECT * FROM orders WHERE order_id = ?');
  const itemsOf = db.prepare<[number], OrderItemRow>(
    'SELECT * FROM order_items WHERE order_id = ? ORDER BY order_item_id',
  );
  const countAttempt = db.prepare('UPDATE orders SET attempts = attempts + 1 WHERE order_id = ?');
  const takeStock = db.prepare('UPDATE listings SET stock = stock - ? WHERE listing_id = ? AND stock >= ?');
  const returnStock = db.prepare('UPDATE listings SET stock = stock + ? WHERE listing_id = ?');
  const priceItem = db.prepare(
    `UPDATE order_items SET cost_cents = ?, shipcost_cents = ?, tax_cents = ?, min_days = ?, max_days = ?
      WHERE order_item_id = ?`,
  );
  const moveQueued = db.prepare(
    `UPDATE order_items SET status = ?, updated_at = ?, status_changed_at = ? WHERE order_item_id = ? AND status = 1`,
  );
  const declineQueued = db.prepare(
    `UPDATE order_items SET status = ?, shipcost_cents = 0, tax_cents = 0, updated_at = ?, status_changed_at = ?
      WHERE order_id = ? AND status = 1`,
  );
  const setPhase = db.prepare(
    'UPDATE orders SET phase = ?, tax_cents = ?, tax_model = ?, total_cents = ? WHERE order_id = ?',
  );
  const settle = db.prepare(`UPDATE orders SET phase = 'settled' WHERE order_id = ?`);
  const zeroTax = db.prepare(
    `UPDATE orders SET tax_cents = CASE WHEN tax_cents IS NULL THEN NULL ELSE 0 END WHERE order_id = ?`,
  );
  const ledger = db.prepare(
    `INSERT INTO ledger_entries (entry_key, order_id, order_item_id, kind, amount_cents, currency, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (entry_key) DO NOTHING`,
  );

  // The worker's moves out of QUEUED ask the same table as every other path.
  const moveOutOfQueued = (to: ItemStatusCode): ItemStatusCode => {
    if (!canMove(ItemStatus.QUEUED, to)) throw new Error(`QUEUED cannot move to ${to}`);
    return to;
  };

  function reserve(order: OrderRow, now: number, price: PriceStoredOrder): AttemptStep {
    const items = itemsOf.all(order.order_id);
    const listingIds = [...new Set(items.map((i) => i.listing_id))];
    const pricing = price(order, items, catalog.loadForPricing(listingIds));
    const queue = [...items];
    for (const line of pricing.lines) {
      for (const priced of line.items) {
        const item = queue.shift()!;
        priceItem.run(
          priced.costCents,
          priced.shipcostCents,
          priced.taxCents,
          line.minDays,
          line.maxDays,
          item.order_item_id,
        );
        if (line.status !== ItemStatus.ORDERED)
          moveQueued.run(moveOutOfQueued(line.status), now, now, item.order_item_id);
      }
      if (line.status === ItemStatus.ORDERED) takeStock.run(line.quantity, line.listingId, line.quantity);
    }
    const bought = pricing.purchasableItemCount > 0;
    setPhase.run(
      bought ? 'reserved' : 'settled',
      pricing.taxCents,
      pricing.taxModel,
      pricing.totalCents,
      order.order_id,
    );
    if (!bought) return { kind: 'settled' };
    return { kind: 'pay', cardId: order.card_id, amountCents: pricing.totalCents, currency: order.currency };
  }

  const beginAttempt = db.transaction(
    (orderId: number, maxAttempts: number, now: number, price: PriceStoredOrder): AttemptStep => {
      const order = orderById.get(orderId);
      if (!order) return { kind: 'missing' };
      if (order.phase === 'settled') return { kind: 'settled' };
      countAttempt.run(orderId);
      if (order.attempts + 1 > maxAttempts) return { kind: 'exhausted', cardId: order.card_id };
      if (order.phase === 'reserved') {
        return {
          kind: 'pay',
          cardId: order.card_id,
          amountCents: order.total_cents!,
          currency: order.currency,
        };
      }
      return reserve(order, now, price);
    },
  );

  const settlePayment = db.transaction((orderId: number, approved: boolean, now: number): boolean => {
    const order = orderById.get(orderId);
    if (!order || order.phase !== 'reserved') return false;
    const key = paymentKey(orderId);
    if (approved) {
      for (const item of itemsOf.all(orderId))
        moveQueued.run(moveOutOfQueued(ItemStatus.ORDERED), now, now, item.order_item_id);
      ledger.run(`authorize:${key}`, orderId, null, 'authorize', order.total_cents, order.currency, now);
    } else {
      releaseQueuedStock(orderId);
      declineQueued.run(moveOutOfQueued(ItemStatus.CREDIT_CARD_REJECTED), now, now, orderId);
      zeroTax.run(orderId);
      ledger.run(`decline:${key}`, orderId, null, 'decline', order.total_cents, order.currency, now);
    }
    settle.run(orderId);
    return true;
  });

  function releaseQueuedStock(orderId: number): void {
    const perListing = new Map<number, number>();
    for (const item of itemsOf.all(orderId)) {
      if (item.status === ItemStatus.QUEUED)
        perListing.set(item.listing_id, (perListing.get(item.listing_id) ?? 0) + 1);
    }
    for (const [listingId, copies] of perListing) returnStock.run(copies, listingId);
  }

  /** Gives up on an order: every QUEUED item FAILED, reserved stock returned. Run after the payment is released. */
  const fail = db.transaction((orderId: number, now: number): boolean => {
    const order = orderById.get(orderId);
    if (!order || order.phase === 'settled') return false;
    if (order.phase === 'reserved') releaseQueuedStock(orderId);
    declineQueued.run(moveOutOfQueued(ItemStatus.FAILED), now, now, orderId);
    zeroTax.run(orderId);
    settle.run(orderId);
    return true;
  });

  return {
    /** Counts an attempt and, for a new order, prices it against current stock and reserves what it buys. */
    beginAttempt(
      orderId: number,
      maxAttempts: number,
      now: number,
      price: PriceStoredOrder,
    ): Promise<AttemptStep> {
      return Promise.resolve(beginAttempt.immediate(orderId, maxAttempts, now, price));
    },
    /** Records the payment's outcome: the reserved items ORDERED, or CREDIT_CARD_REJECTED with the stock back. */
    settlePayment(orderId: number, approved: boolean, now: number): Promise<boolean> {
      return Promise.resolve(settlePayment.immediate(orderId, approved, now));
    },
    fail(orderId: number, now: number): Promise<boolean> {
      return Promise.resolve(fail.immediate(orderId, now));
    },
  };
}
