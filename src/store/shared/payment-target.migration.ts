import { LEDGER_SUM } from './payment-target.sql.js';

/**
 * The migration both adapters apply: a payment version per order and the version the gateway holds, the
 * gateway's own version per payment, and the orders to bring to their ledger: those with an adjustment the
 * delta outbox had not applied, and settled ones whose authorisation differs from the ledger (a clamped delta).
 */
export const PAYMENT_TARGET_MIGRATION_SQL = `
  ALTER TABLE orders ADD COLUMN payment_version INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE orders ADD COLUMN payment_applied_version INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE payments ADD COLUMN ledger_version INTEGER NOT NULL DEFAULT 0;
  DROP INDEX ledger_pending_adjustments;

  UPDATE orders SET payment_version = 1
   WHERE order_id IN (SELECT order_id FROM ledger_entries
                       WHERE applied_at IS NULL AND kind IN ('void', 'extra_shipping', 'refund'))
      OR (phase = 'settled' AND EXISTS (
            SELECT 1 FROM payments p
             WHERE p.idempotency_key = 'order-' || orders.order_id AND p.status = 'authorized'
               AND p.amount_cents <> (SELECT ${LEDGER_SUM} FROM ledger_entries l WHERE l.order_id = orders.order_id)));

  CREATE INDEX orders_payment_pending ON orders (order_id) WHERE payment_applied_version < payment_version;
`;
