import { ItemStatus } from '../../domain/item-status.js';
import { listingsOf } from '../shared/order.rows.js';
import { onceEach } from '../port/processing.port.js';
import type {
  AttemptBegun,
  AttemptRequest,
  ProcessingStore,
  Reservation,
  ReserveResult,
  Settlement,
  StockChange,
} from '../port/store.port.js';
import { pricingCatalogReader } from './catalog.sqlite.js';
import { ledgerWriter } from './ledger.sqlite.js';
import { orderReader } from './orders.sqlite.js';
import type { Db } from './sqlite.db.js';
import { eventRecorder } from './webhooks.sqlite.js';

/** Raised inside a reservation to roll it back whole when a listing no longer has the stock. */
class ShortOfStock extends Error {}

/**
 * A settled order's pending items take its final status. `+status` (SQLite's way of keeping a term off the
 * indexes): the items are found by their order (order_items_order). SQLite gathers no statistics unless told
 * to, and without them it took order_items_status for `status = 1`: each settlement read every pending item of
 * every order, a cost that grew with the backlog.
 */
export const SETTLE_ITEMS_SQL = `UPDATE order_items SET status = @status, updated_at = @now, status_changed_at = @now,
            shipcost_cents = CASE WHEN @clear = 1 THEN 0 ELSE shipcost_cents END,
            tax_cents = CASE WHEN @clear = 1 THEN 0 ELSE tax_cents END
      WHERE order_id = @orderId AND +status = 1`;

/** The worker's atomic steps: count an attempt, apply a priced reservation, settle. */
export function sqliteProcessing(db: Db): ProcessingStore {
  const read = orderReader(db);
  const readPricingCatalog = pricingCatalogReader(db);
  const countAttempt = db.prepare(
    `UPDATE orders SET attempts = attempts + 1,
            lease_until = CASE WHEN attempts + 1 <= @maxAttempts THEN @leaseUntil ELSE lease_until END
      WHERE order_id = @orderId AND phase <> 'settled'`,
  );
  const reservePhase = db.prepare(
    `UPDATE orders SET phase = @phase, tax_cents = @taxCents, tax_model = @taxModel, total_cents = @totalCents
      WHERE order_id = @orderId AND phase = 'queued'`,
  );
  const takeStock = db.prepare('UPDATE listings SET stock = stock - ? WHERE listing_id = ? AND stock >= ?');
  const returnStock = db.prepare('UPDATE listings SET stock = stock + ? WHERE listing_id = ?');
  const priceItem = db.prepare(
    `UPDATE order_items SET cost_cents = ?, shipcost_cents = ?, tax_cents = ?, min_days = ?, max_days = ?
      WHERE order_item_id = ?`,
  );
  const rejectItem = db.prepare(
    `UPDATE order_items SET status = ?, updated_at = ?, status_changed_at = ?
      WHERE order_item_id = ? AND status = 1`,
  );
  const settlePhase = db.prepare(
    `UPDATE orders SET phase = 'settled', payment_version = payment_version + @releasePayment,
            tax_cents = CASE WHEN @zeroTax = 1 AND tax_cents IS NOT NULL THEN 0 ELSE tax_cents END
      WHERE order_id = @orderId AND phase = @fromPhase
        AND (@leaseFreeAt IS NULL OR lease_until IS NULL OR lease_until <= @leaseFreeAt)`,
  );
  const settleItems = db.prepare(SETTLE_ITEMS_SQL);
  const writeLedger = ledgerWriter(db);
  const recordEvent = eventRecorder(db);

  const giveBack = (changes: readonly StockChange[]) => {
    for (const { listingId, copies } of changes) returnStock.run(copies, listingId);
  };

  const ledgerHas = db.prepare<[string], { one: number }>(
    'SELECT 1 AS one FROM ledger_entries WHERE entry_key = ?',
  );

  const reserve = db.transaction((r: Reservation): ReserveResult => {
    if (reservePhase.run(r).changes === 0) return 'not-queued';
    for (const { listingId, copies } of r.take) {
      if (takeStock.run(copies, listingId, copies).changes !== 1) throw new ShortOfStock();
    }
    for (const item of r.items) {
      priceItem.run(
        item.costCents,
        item.shipcostCents,
        item.taxCents,
        item.minDays,
        item.maxDays,
        item.orderItemId,
      );
      if (item.status !== ItemStatus.QUEUED) rejectItem.run(item.status, r.now, r.now, item.orderItemId);
    }
    if (r.event) recordEvent(r.orderId, r.event, r.now);
    return 'applied';
  });

  const beginOne = ({ orderId, lease, price }: AttemptRequest): AttemptBegun | null => {
    countAttempt.run({ orderId, ...lease });
    const stored = read(orderId);
    if (!stored) return null;
    const { phase, attempts } = stored.order;
    if (phase !== 'queued' || attempts > lease.maxAttempts)
      return { ...stored, catalog: null, reserved: null };
    const start = { ...stored, catalog: readPricingCatalog(listingsOf(stored.items)) };
    if (!price) return { ...start, reserved: null };
    try {
      // A nested transaction is a savepoint: a reservation short of stock is undone, the count kept.
      reserve(price(start));
      return { ...start, reserved: 'applied' };
    } catch (err) {
      if (!(err instanceof ShortOfStock)) throw err;
      return { ...start, reserved: 'short' };
    }
  };
  const beginAttempt = db.transaction(beginOne);
  // One after the other in order id order under one write lock: each sees the stock the ones before it took.
  const beginAttemptMany = db.transaction((requests: readonly AttemptRequest[]) => {
    onceEach(requests);
    const begun = new Map(
      [...requests].sort((a, b) => a.orderId - b.orderId).map((r) => [r.orderId, beginOne(r)]),
    );
    return requests.map((r) => begun.get(r.orderId) ?? null);
  });

  const settleOne = (s: Settlement): boolean => {
    const { orderId, fromPhase, now } = s;
    const guard = {
      orderId,
      fromPhase,
      zeroTax: s.zeroTax ? 1 : 0,
      leaseFreeAt: s.leaseFreeAt ?? null,
      releasePayment: s.releasePayment ? 1 : 0,
    };
    if (settlePhase.run(guard).changes === 0) return false;
    settleItems.run({ orderId, status: s.itemStatus, now, clear: s.clearCharges ? 1 : 0 });
    giveBack(s.giveBack);
    if (s.ledger) writeLedger(s.ledger, now);
    if (s.event) recordEvent(orderId, s.event, now);
    return true;
  };
  const settle = db.transaction(settleOne);
  const settleMany = db.transaction((list: readonly Settlement[]) => list.map(settleOne));

  return {
    async beginAttempt(orderId, lease, price) {
      return beginAttempt.immediate({ orderId, lease, price });
    },
    async beginAttemptMany(requests) {
      return beginAttemptMany.immediate(requests);
    },
    async reserve(reservation) {
      try {
        return reserve.immediate(reservation);
      } catch (err) {
        if (err instanceof ShortOfStock) return 'short';
        throw err;
      }
    },
    async settle(settlement) {
      return settle.immediate(settlement);
    },
    async settleMany(settlements) {
      return settleMany.immediate(settlements);
    },
    async ledgerHas(entryKey) {
      return ledgerHas.get(entryKey) !== undefined;
    },
  };
}
