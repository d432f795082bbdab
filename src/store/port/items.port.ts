/** Part of the store port (../store.port.ts): item moves and the payment outbox. */
import type { ItemStatusCode } from '../../domain/item-status.js';
import type { Currency } from '../../domain/money.js';
import type { StoredItem } from './orders.port.js';
import type { LedgerWrite } from './processing.port.js';
import type { OrderEventWrite } from './webhooks.port.js';

export interface StoredItemWithCurrency extends StoredItem {
  currency: Currency;
}

/** One item's move as the service decided it, applied only while the item is as the service read it. */
export interface ItemMoveWrite {
  orderItemId: number;
  from: ItemStatusCode;
  /** The item's statusChangedAt as read: together with `from`, the compare of a compare-and-set. */
  fromChangedAt: number;
  to: ItemStatusCode;
  now: number;
  addShipcostCents: number;
  /** Values left null keep what is stored. */
  extraShippingCents: number | null;
  shippingCompany: string | null;
  trackingId: string | null;
  /** One copy of this listing goes back to stock. */
  returnStockOf: number | null;
  ledger: LedgerWrite | null;
  /** The order event recorded with the move. */
  event?: OrderEventWrite;
}

export type ItemMoveWriteResult =
  { kind: 'moved'; item: StoredItemWithCurrency; entryId: number | null } | { kind: 'changed' };

export interface ItemStore {
  getItem(orderItemId: number): Promise<StoredItemWithCurrency | null>;
  /** Writing a new ledger entry also moves the order's payment version on (see LedgerStore). */
  applyMove(move: ItemMoveWrite): Promise<ItemMoveWriteResult>;
}
