// The ledger invariant of docs/api.md#item-statuses-and-moves, read straight from the store.
import type { Probe } from './store.probe.js';

/** authorize + extra_shipping − void − refund, the shares of the bought items, and what the gateway holds. */
export async function ledgerBalance(
  probe: Probe,
  orderId: number,
): Promise<{ ledger: number; bought: number; gateway: number }> {
  const ledger = await probe.scalar(
    `SELECT coalesce(sum(CASE WHEN kind IN ('authorize', 'extra_shipping') THEN amount_cents
            WHEN kind IN ('void', 'refund') THEN -amount_cents ELSE 0 END), 0) FROM ledger_entries WHERE order_id = ?`,
    orderId,
  );
  const bought = await probe.scalar(
    `SELECT coalesce(sum(cost_cents + shipcost_cents + tax_cents), 0) FROM order_items
      WHERE order_id = ? AND status IN (5, 93, 4, 35)`,
    orderId,
  );
  const gateway = await probe.scalar(
    'SELECT amount_cents FROM payments WHERE idempotency_key = ?',
    `order-${orderId}`,
  );
  return { ledger, bought, gateway };
}
