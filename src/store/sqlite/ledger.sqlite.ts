import type { LedgerStore, LedgerWrite, PaymentTarget } from '../port/store.port.js';
import { LEDGER_COLUMNS, ledgerParams } from '../shared/ledger.rows.js';
import { PAYMENT_TARGET_COLUMNS } from '../shared/payment-target.sql.js';
import type { Db } from './sqlite.db.js';

/** Writes a ledger entry once per entry key; returns its id, or null when the key was written before. */
export function ledgerWriter(db: Db): (entry: LedgerWrite, now: number) => number | null {
  const insert = db.prepare<unknown[], { entry_id: number }>(
    `INSERT INTO ledger_entries (${LEDGER_COLUMNS})
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (entry_key) DO NOTHING RETURNING entry_id`,
  );
  return (entry, now) => insert.get(...ledgerParams(entry, now))?.entry_id ?? null;
}

/** Moves an order's payment version on: called inside the transaction that changes what the gateway must hold. */
export function paymentVersionBumper(db: Db): (orderId: number) => void {
  const bump = db.prepare('UPDATE orders SET payment_version = payment_version + 1 WHERE order_id = ?');
  return (orderId) => void bump.run(orderId);
}

export function sqliteLedger(db: Db): LedgerStore {
  const target = db.prepare<[number], PaymentTarget>(
    `SELECT ${PAYMENT_TARGET_COLUMNS} FROM orders o WHERE o.order_id = ?`,
  );
  const markApplied = db.prepare(
    `UPDATE orders SET payment_applied_version = @version
      WHERE order_id = @orderId AND payment_applied_version < @version`,
  );
  return {
    async paymentTarget(orderId) {
      return target.get(orderId) ?? null;
    },
    async markPaymentApplied(orderId, version) {
      markApplied.run({ orderId, version });
    },
  };
}
