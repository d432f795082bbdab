import type { PaymentRecord, PaymentStore } from '../store.port.js';
import type { Db } from './sqlite.db.js';

interface PaymentRow {
  status: 'authorized' | 'declined';
  amount_cents: number;
}

const toRecord = (row: PaymentRow): PaymentRecord => ({ status: row.status, amountCents: row.amount_cents });

/** The sandbox processor's authorisations and their adjustments, each keyed for idempotency. */
export function sqlitePayments(db: Db): PaymentStore {
  const insert = db.prepare(
    `INSERT INTO payments (idempotency_key, card_id, currency, amount_cents, status, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING`,
  );
  const byKey = db.prepare<[string], PaymentRow>(
    'SELECT status, amount_cents FROM payments WHERE idempotency_key = ?',
  );
  const insertStep = db.prepare(
    `INSERT INTO payment_adjustments (adjustment_key, payment_key, delta_cents, created_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (adjustment_key) DO NOTHING`,
  );
  const apply = db.prepare(
    `UPDATE payments SET amount_cents = max(0, amount_cents + ?), updated_at = ?
      WHERE idempotency_key = ? AND status = 'authorized'`,
  );

  const authorize = db.transaction(
    (key: string, cardId: number, currency: string, amountCents: number, approved: boolean, now: number) => {
      insert.run(key, cardId, currency, amountCents, approved ? 'authorized' : 'declined', now, now);
      return toRecord(byKey.get(key)!);
    },
  );
  const adjust = db.transaction((key: string, stepKey: string, deltaCents: number | null, now: number) => {
    const payment = byKey.get(key);
    if (!payment || payment.status !== 'authorized') return false;
    const delta = deltaCents ?? -payment.amount_cents;
    if (insertStep.run(stepKey, key, delta, now).changes === 0) return false;
    apply.run(delta, now, key);
    return true;
  });

  return {
    async authorizeOnce({ key, cardId, currency, amountCents, approved, now }) {
      return authorize.immediate(key, cardId, currency, amountCents, approved, now);
    },
    async adjustOnce(key, stepKey, deltaCents, now) {
      return adjust.immediate(key, stepKey, deltaCents, now);
    },
    async find(key) {
      const row = byKey.get(key);
      return row ? toRecord(row) : null;
    },
  };
}
