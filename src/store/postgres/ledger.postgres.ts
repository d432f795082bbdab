import type pg from 'pg';
import type { LedgerStore, LedgerWrite, PaymentTarget } from '../port/store.port.js';
import { LEDGER_COLUMNS, ledgerParams } from '../shared/ledger.rows.js';
import { PAYMENT_TARGET_COLUMNS } from '../shared/payment-target.sql.js';
import type { Queryable } from './postgres.pool.js';

export const INSERT_SQL = `
  INSERT INTO ledger_entries (${LEDGER_COLUMNS})
  VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (entry_key) DO NOTHING RETURNING entry_id`;

// A new adjustment entry moves its order's payment version on under the order's row lock, so versions commit
// in the order they are taken and a reader that sees a version sees every entry before it.
const INSERT_ADJUSTMENT_SQL = `
  WITH entry AS (${INSERT_SQL}, order_id),
  bumped AS (
    UPDATE orders o SET payment_version = o.payment_version + 1 FROM entry e WHERE o.order_id = e.order_id)
  SELECT entry_id FROM entry`;

/** Writes a ledger entry once per entry key; the new entry's id, or null when the key was written before. */
export async function writeLedger(db: Queryable, entry: LedgerWrite, now: number): Promise<number | null> {
  const { rows } = await db.query<{ entry_id: number }>(INSERT_SQL, ledgerParams(entry, now));
  return rows[0]?.entry_id ?? null;
}

/** As writeLedger, for an entry that changes what the gateway must hold: the order's payment version moves on. */
export async function writeAdjustment(
  db: Queryable,
  entry: LedgerWrite,
  now: number,
): Promise<number | null> {
  const { rows } = await db.query<{ entry_id: number }>(INSERT_ADJUSTMENT_SQL, ledgerParams(entry, now));
  return rows[0]?.entry_id ?? null;
}

const TARGET_SQL = `SELECT ${PAYMENT_TARGET_COLUMNS} FROM orders o WHERE o.order_id = $1`;

export function postgresLedger(pool: pg.Pool): LedgerStore {
  return {
    async paymentTarget(orderId) {
      return (await pool.query<PaymentTarget>(TARGET_SQL, [orderId])).rows[0] ?? null;
    },
    async markPaymentApplied(orderId, version) {
      await pool.query(
        `UPDATE orders SET payment_applied_version = $2
          WHERE order_id = $1 AND payment_applied_version < $2`,
        [orderId, version],
      );
    },
  };
}
