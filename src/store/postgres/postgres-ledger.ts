import type { LedgerWrite } from '../store.port.js';
import type { Queryable } from './postgres.pool.js';

/** Writes a ledger entry once per entry key; the new entry's id, or null when the key was written before. */
export async function writeLedger(db: Queryable, entry: LedgerWrite, now: number): Promise<number | null> {
  const { rows } = await db.query<{ entry_id: number }>(
    `INSERT INTO ledger_entries (entry_key, order_id, order_item_id, kind, amount_cents, currency, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (entry_key) DO NOTHING RETURNING entry_id`,
    [entry.entryKey, entry.orderId, entry.orderItemId, entry.kind, entry.amountCents, entry.currency, now],
  );
  return rows[0]?.entry_id ?? null;
}
