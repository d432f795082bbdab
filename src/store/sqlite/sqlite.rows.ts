import type { OrderAddress, StoredOrder } from '../port/store.port.js';
import { toStoredOrder as mapOrder, type OrderRow as Row } from '../shared/order.rows.js';

export { newStoredItem } from '../shared/order.rows.js';

/** An order row as SQLite stores it: the addresses as JSON text. */
export type OrderRow = Row<string>;

export const toStoredOrder = (r: OrderRow): StoredOrder =>
  mapOrder(r, (address) => JSON.parse(address) as OrderAddress);

/** An order row read as one JSON value (orders.sqlite.ts, rowAsJson): the addresses already objects. */
export type OrderJsonRow = Row<OrderAddress>;

export const toStoredOrderFromJson = (r: OrderJsonRow): StoredOrder => mapOrder(r, (address) => address);
