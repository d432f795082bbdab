import type { LedgerWrite } from '../store.port.js';
import type { Db } from './sqlite.db.js';

/** Writes a ledger entry once per entry key; returns its id, or null when the key was written before. */
export function ledgerWriter(db: Db): (entry: LedgerWrite, now: number) => number | null {
  const insert = db.prepare<unknown[], { entry_id: number }>(
    `INSERT INTO ledger_entries (entry_key, order_id, order_item_id, kind, amount_cents, currency, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (entry_key) DO NOTHING RETURNING entry_id`,
  );
  return (entry, now) =>
    insert.get(
      entry.entryKey,
      entry.orderId,
      entry.orderItemId,
      entry.kind,
      entry.amountCents,
      entry.currency,
      now,
    )?.entry_id ?? null;
}
