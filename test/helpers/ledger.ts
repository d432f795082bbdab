// The ledger invariant of CONTRACT.md section 8, read straight from the store.
import type { Db } from '../../src/store/db.js';

/** authorize + extra_shipping − void − refund, the shares of the bought items, and what the gateway holds. */
export function ledgerBalance(db: Db, orderId: number): { ledger: number; bought: number; gateway: number } {
  const ledger = db
    .prepare(
      `SELECT coalesce(sum(CASE WHEN kind IN ('authorize', 'extra_shipping') THEN amount_cents
              WHEN kind IN ('void', 'refund') THEN -amount_cents ELSE 0 END), 0) FROM ledger_entries WHERE order_id = ?`,
    )
    .pluck()
    .get(orderId) as number;
  const bought = db
    .prepare(
      `SELECT coalesce(sum(cost_cents + shipcost_cents + tax_cents), 0) FROM order_items
        WHERE order_id = ? AND status IN (5, 93, 4, 35)`,
    )
    .pluck()
    .get(orderId) as number;
  const gateway = db
    .prepare('SELECT amount_cents FROM payments WHERE idempotency_key = ?')
    .pluck()
    .get(`order-${orderId}`) as number;
  return { ledger, bought, gateway };
}
