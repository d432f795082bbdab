import type pg from 'pg';
import type { AcceptResult, NewOrder, OrderWithItems } from '../port/store.port.js';
import type { Queryable } from './postgres.pool.js';
import { ITEM_LINE_COLUMNS, fieldOf, type ItemLineColumn } from '../shared/item.columns.js';
import { newOrderWithItems, type OrderRow } from './postgres.rows.js';

/** The PostgreSQL type of each column an order gives its items, as acceptance's statements read them. */
export const LINE_TYPES: Record<ItemLineColumn, 'int' | 'bigint' | 'text'> = {
  line_no: 'int',
  listing_id: 'bigint',
  vendor_id: 'bigint',
  title: 'text',
  isbn: 'text',
  line_quantity: 'int',
  max_price_cents: 'bigint',
  min_days: 'int',
  max_days: 'int',
  cost_cents: 'bigint',
};

const LINE = ITEM_LINE_COLUMNS.join(', ');

/**
 * The next item id, drawn in the row that carries the item's ordinal: PostgreSQL promises neither the order in
 * which it numbers the rows of an INSERT … SELECT nor that of its RETURNING, so an id is paired with its item by
 * the row it was drawn in, never by position. The identity's own sequence (order_items.order_item_id).
 */
export const NEXT_ITEM_ID = `nextval('order_items_order_item_id_seq'::regclass)`;

/** Inserts the rows of the CTE `numbered`, each with the id drawn for it (NEXT_ITEM_ID), QUEUED, no charges yet. */
export const INSERT_NUMBERED_ITEMS = `
    INSERT INTO order_items (order_item_id, order_id, client_id, order_created_at, ${LINE}, shipcost_cents,
      tax_cents, status, updated_at, status_changed_at)
    SELECT order_item_id, order_id, client_id, created_at, ${LINE}, 0, 0, 1, created_at, created_at
      FROM numbered`;

// Every order of a batch and its items in one statement, so one round trip and one commit. The orders go in
// (client, request id) order: two batches that share keys take their locks in the same order and wait for each
// other instead of deadlocking. A key stored before, or by a concurrent transaction (whose commit the insert
// waits for), inserts nothing and returns nothing, nor do its items, which join the orders inserted. Items are
// numbered in request order, so that each order's item ids follow its listings as the single accept gives them,
// and come back by their ordinal (NEXT_ITEM_ID). An order comes back as JSON of its row (as the order functions
// return it), so that a new order is answered without reading it back and the statement's result type does not
// change when a column is added; its items as their ids alone, in request order, by order id: an item's row is
// what the order gave it (newStoredItem).
// The batch is one JSON parameter, the orders as the service holds them (NewOrder, its items nested), read by
// name with json_to_recordset: one JSON.stringify in the web instead of 25 arrays, each built by a pass over
// the batch and encoded as an array literal by node-postgres element by element (the strings escaped one by one).
const ACCEPT_SQL = `
  WITH t AS (
    SELECT t.client_id, t.request_id, t.request_hash, t.reference_id, t.domain, t.currency, t.shipping_mode,
           t.ship_addr, t.bill_addr, t.card_id, t.total_max_price_cents, t.created_at, t.items, t.n
      FROM ROWS FROM (json_to_recordset($1::json) AS ("clientId" bigint, "requestId" text, "requestHash" text,
             "referenceId" text, "domain" text, "currency" text, "shippingMode" text, "shipAddr" jsonb,
             "billAddr" jsonb, "cardId" bigint, "totalMaxPriceCents" bigint, "createdAt" bigint, "items" json))
           WITH ORDINALITY AS t(client_id, request_id, request_hash, reference_id, domain, currency, shipping_mode,
                ship_addr, bill_addr, card_id, total_max_price_cents, created_at, items, n)
  ), o AS (
    INSERT INTO orders (client_id, request_id, request_hash, reference_id, domain, currency, shipping_mode,
      ship_addr, bill_addr, card_id, total_max_price_cents, created_at, item_count)
    SELECT t.client_id, t.request_id, t.request_hash, t.reference_id, t.domain, t.currency, t.shipping_mode,
           t.ship_addr, t.bill_addr, t.card_id, t.total_max_price_cents, t.created_at, json_array_length(t.items)
      FROM t
     ORDER BY t.n
    ON CONFLICT (client_id, request_id) DO NOTHING
    RETURNING order_id, client_id, request_id, created_at, row_to_json(orders) AS r
  ), numbered AS (
    SELECT ${NEXT_ITEM_ID} AS order_item_id, o.order_id, o.client_id, o.created_at,
           ${ITEM_LINE_COLUMNS.map((c) => `x.${c}`).join(', ')}, t.n, x.k
      FROM t
      JOIN o ON o.client_id = t.client_id AND o.request_id = t.request_id
     CROSS JOIN LATERAL ROWS FROM (json_to_recordset(t.items)
             AS (${ITEM_LINE_COLUMNS.map((c) => `"${fieldOf(c)}" ${LINE_TYPES[c]}`).join(', ')}))
           WITH ORDINALITY AS x(${LINE}, k)
     ORDER BY t.n, x.k
  ), i AS (${INSERT_NUMBERED_ITEMS}
  )
  SELECT (SELECT json_agg(r) FROM o) AS orders,
         (SELECT json_object_agg(order_id, ids)
            FROM (SELECT order_id, json_agg(order_item_id ORDER BY k) AS ids FROM numbered GROUP BY order_id) g)
           AS item_ids`;

// A new statement under READ COMMITTED: it sees the rows whose commit the insert waited for.
const EXISTING_SQL = `
  SELECT o.order_id, o.client_id, o.request_id, o.request_hash
    FROM orders o JOIN unnest($1::bigint[], $2::text[]) AS k(client_id, request_id) USING (client_id, request_id)`;

const keyOf = (o: { clientId: number; requestId: string }): string => `${o.clientId}\u0000${o.requestId}`;
const byKey = (a: NewOrder, b: NewOrder): number =>
  a.clientId - b.clientId || (a.requestId < b.requestId ? -1 : a.requestId > b.requestId ? 1 : 0);

/**
 * Accepts a batch in one statement (the orders and their items), each order as the single accept would:
 * created, a duplicate of the stored order with its hash, or a conflict. The keys not created are then looked
 * up in a statement of their own (a duplicate is rare): under READ COMMITTED a statement of the same
 * transaction would have seen no more than this one does.
 */
export async function acceptOrderBatch(pool: pg.Pool, orders: readonly NewOrder[]): Promise<AcceptResult[]> {
  const firsts = new Map<string, NewOrder>();
  for (const order of orders) if (!firsts.has(keyOf(order))) firsts.set(keyOf(order), order);
  const unique = [...firsts.values()].sort(byKey);
  const created = await insertOrders(pool, unique);
  const stored = await existing(
    pool,
    unique.filter((o) => !created.has(keyOf(o))),
  );
  for (const [key, { order }] of created)
    stored.set(key, { orderId: order.orderId, requestHash: firsts.get(key)!.requestHash });
  const answered = new Set<string>();
  return orders.map((order): AcceptResult => {
    const key = keyOf(order);
    const first = !answered.has(key);
    answered.add(key);
    const row = stored.get(key);
    if (!row) throw new Error(`order of request ${order.requestId} conflicted but cannot be found`);
    const mine = first && created.get(key);
    if (mine) return { kind: 'created', orderId: row.orderId, stored: mine };
    return row.requestHash === order.requestHash
      ? { kind: 'duplicate', orderId: row.orderId }
      : { kind: 'conflict' };
  });
}

/** The new orders with their items, by key; keys already stored are absent. */
async function insertOrders(
  db: Queryable,
  orders: readonly NewOrder[],
): Promise<Map<string, OrderWithItems>> {
  const { rows } = await db.query<{ orders: OrderRow[] | null; item_ids: Record<string, number[]> | null }>(
    ACCEPT_SQL,
    [JSON.stringify(orders)],
  );
  const given = new Map(orders.map((order) => [keyOf(order), order]));
  const itemIds = rows[0]?.item_ids ?? {};
  const created = new Map<string, OrderWithItems>();
  for (const row of rows[0]?.orders ?? []) {
    const key = keyOf({ clientId: row.client_id, requestId: row.request_id });
    created.set(key, newOrderWithItems(row, given.get(key)!, itemIds[row.order_id] ?? []));
  }
  return created;
}

/** The stored order and request hash of each key that was not created now. */
async function existing(tx: Queryable, orders: readonly NewOrder[]) {
  const found = new Map<string, { orderId: number; requestHash: string }>();
  if (orders.length === 0) return found;
  const { rows } = await tx.query<{
    order_id: number;
    client_id: number;
    request_id: string;
    request_hash: string;
  }>(EXISTING_SQL, [orders.map((o) => o.clientId), orders.map((o) => o.requestId)]);
  for (const r of rows)
    found.set(keyOf({ clientId: r.client_id, requestId: r.request_id }), {
      orderId: r.order_id,
      requestHash: r.request_hash,
    });
  return found;
}
