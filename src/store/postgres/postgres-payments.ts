import type pg from 'pg';
import type { PaymentRecord, PaymentStore } from '../store.port.js';
import { withTransaction } from './postgres.pool.js';

interface PaymentRow {
  status: PaymentRecord['status'];
  amount_cents: number;
}

const toRecord = (r: PaymentRow): PaymentRecord => ({ status: r.status, amountCents: r.amount_cents });

/** The sandbox payment processor's own records: authorisations by idempotency key, adjustments by step key. */
export function postgresPayments(pool: pg.Pool): PaymentStore {
  const find = async (key: string): Promise<PaymentRecord | null> => {
    const { rows } = await pool.query<PaymentRow>(
      'SELECT status, amount_cents FROM payments WHERE idempotency_key = $1',
      [key],
    );
    return rows[0] ? toRecord(rows[0]) : null;
  };

  return {
    async authorizeOnce({ key, cardId, currency, amountCents, approved, now }) {
      await pool.query(
        `INSERT INTO payments (idempotency_key, card_id, currency, amount_cents, status, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (idempotency_key) DO NOTHING`,
        [key, cardId, currency, amountCents, approved ? 'authorized' : 'declined', now],
      );
      // A new statement: it sees the first outcome, whichever insert wrote it.
      const stored = await find(key);
      if (!stored) throw new Error(`payment ${key} was recorded but cannot be found`);
      return stored;
    },
    adjustOnce(key, stepKey, deltaCents, now) {
      return withTransaction(pool, async (tx) => {
        // Locked: two steps of one payment apply one after the other, each to the amount the other left.
        const { rows } = await tx.query<PaymentRow>(
          'SELECT status, amount_cents FROM payments WHERE idempotency_key = $1 FOR UPDATE',
          [key],
        );
        const payment = rows[0];
        if (payment?.status !== 'authorized') return false;
        const delta = deltaCents ?? -payment.amount_cents;
        const step = await tx.query(
          `INSERT INTO payment_adjustments (adjustment_key, payment_key, delta_cents, created_at)
           VALUES ($1, $2, $3, $4) ON CONFLICT (adjustment_key) DO NOTHING`,
          [stepKey, key, delta, now],
        );
        if (step.rowCount !== 1) return false;
        await tx.query(
          `UPDATE payments SET amount_cents = GREATEST(0, amount_cents + $2), updated_at = $3
            WHERE idempotency_key = $1`,
          [key, delta, now],
        );
        return true;
      });
    },
    find,
  };
}
