import type pg from 'pg';
import type { NewOrder, OrderAddress, OrderWithItems, StoredOrder } from '../port/store.port.js';
import { newStoredItem, toStoredOrder as mapOrder, type OrderRow as Row } from '../shared/order.rows.js';

/** An order row as PostgreSQL returns it: BIGINT already numbers, JSONB addresses already objects. */
export type OrderRow = Row<OrderAddress>;

export const toStoredOrder = (r: OrderRow): StoredOrder => mapOrder(r, (address) => address);

/**
 * A new order as its acceptance stored it: its row, and its items made from the order, `itemIds` the ids of its
 * items in request order. The items by id, as a read gives them (the ids ascend in request order as PostgreSQL
 * draws them, which it does not promise).
 */
export function newOrderWithItems(
  row: OrderRow,
  order: NewOrder,
  itemIds: readonly number[],
): OrderWithItems {
  const orderId = row.order_id;
  return {
    order: toStoredOrder(row),
    items: order.items
      .map((item, k) => newStoredItem(itemIds[k]!, orderId, order, item))
      .sort((a, b) => a.orderItemId - b.orderItemId),
  };
}

/**
 * Whether a number can be a stored id. An id from outside (a URL, a query, the CLI) beyond BIGINT or with a
 * fraction would fail the query in PostgreSQL, where SQLite just finds nothing: it names no row here either.
 */
export const canBeId = (n: number): boolean => Number.isSafeInteger(n);

/** Sets one text column of many rows by id in one statement. Names come from this code, never from input. */
export async function updateColumn(
  tx: pg.ClientBase,
  table: string,
  idColumn: string,
  column: string,
  values: [number, string][],
): Promise<void> {
  if (values.length === 0) return;
  await tx.query(
    `UPDATE ${table} t SET ${column} = v.value
       FROM unnest($1::bigint[], $2::text[]) AS v (id, value) WHERE t.${idColumn} = v.id`,
    [values.map(([id]) => id), values.map(([, value]) => value)],
  );
}
