import type { LedgerWrite } from '../port/store.port.js';

/** The columns of a ledger entry as both adapters insert it, and its values in that order. */
export const LEDGER_COLUMNS = 'entry_key, order_id, order_item_id, kind, amount_cents, currency, created_at';

export const ledgerParams = (entry: LedgerWrite, now: number): unknown[] => [
  entry.entryKey,
  entry.orderId,
  entry.orderItemId,
  entry.kind,
  entry.amountCents,
  entry.currency,
  now,
];
