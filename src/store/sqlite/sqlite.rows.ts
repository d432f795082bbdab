import type { OrderAddress, StoredOrder } from '../store.port.js';
import { toStoredOrder as mapOrder, type OrderRow as Row } from '../order.rows.js';

export { toItemWithCurrency, toStoredItem, type ItemRow, type ItemWithCurrencyRow } from '../order.rows.js';

/** An order row as SQLite stores it: the addresses as JSON text. */
export type OrderRow = Row<string>;

export const toStoredOrder = (r: OrderRow): StoredOrder =>
  mapOrder(r, (address) => JSON.parse(address) as OrderAddress);
