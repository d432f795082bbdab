/**
 * SQL both adapters share for an order's payment target (PaymentTarget in store.port.ts): the same text runs on
 * SQLite and PostgreSQL.
 */

/** authorize + extra_shipping − void − refund over the ledger rows in scope, 0 without any; an integer on both. */
export const LEDGER_SUM = `CAST(coalesce(sum(CASE
    WHEN kind IN ('authorize', 'extra_shipping') THEN amount_cents
    WHEN kind IN ('void', 'refund') THEN -amount_cents
    ELSE 0 END), 0) AS BIGINT)`;

/** The columns of PaymentTarget for the order `o`, in one statement: one snapshot of version and ledger. */
export const PAYMENT_TARGET_COLUMNS = `
  o.order_id AS "orderId", o.card_id AS "cardId", o.currency,
  o.payment_version AS "version", o.payment_applied_version AS "appliedVersion",
  (SELECT ${LEDGER_SUM} FROM ledger_entries l WHERE l.order_id = o.order_id) AS "amountCents"`;
