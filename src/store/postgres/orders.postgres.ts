import type pg from 'pg';
import type {
  AcceptResult,
  NewOrder,
  OrderPhase,
  OrderStore,
  OrderWithItems,
  StoredItem,
} from '../port/store.port.js';
import { ITEM_LINE_COLUMNS, itemFields, fieldOf } from '../shared/item.columns.js';
import { acceptOrderBatch, INSERT_NUMBERED_ITEMS, LINE_TYPES, NEXT_ITEM_ID } from './order-batch.postgres.js';
import type { Queryable } from './postgres.pool.js';
import { ITEMS_OF_ORDER } from './item-counts.postgres.js';
import { canBeId, newOrderWithItems, toStoredOrder, type OrderRow } from './postgres.rows.js';

// One statement, so one atomic write: the order, then its items from parallel arrays in request order. The order
// comes back as JSON of its row (as `readOrder` reads it), its items as their ids alone, in request order: an
// item's row is what the order gave it (newStoredItem), so none is read back. No `*` (the lines' columns are
// named), so the statement is prepared once per connection (store-client.ts) instead of planned at every order.
// Each item's id is drawn in the row that carries its ordinal (numbered), and the insert is given it: neither the
// order in which PostgreSQL numbers the rows of an INSERT … SELECT nor that of its RETURNING is promised.
// On a duplicate key the order insert returns nothing and so inserts no items; a concurrent insert of the same
// key waits for the first to commit and then returns nothing too.
/** The parameter of the first line column's array: after the order's 13. */
const FIRST_LINE = 14;
const ACCEPT_SQL = `
  WITH accepted AS (
    INSERT INTO orders (client_id, request_id, request_hash, reference_id, domain, currency, shipping_mode,
      ship_addr, bill_addr, card_id, total_max_price_cents, created_at, item_count)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, $10, $11, $12, $13)
    ON CONFLICT (client_id, request_id) DO NOTHING
    RETURNING order_id, client_id, created_at, row_to_json(orders) AS r),
  numbered AS (
    SELECT ${NEXT_ITEM_ID} AS order_item_id, a.order_id, a.client_id, a.created_at,
           ${ITEM_LINE_COLUMNS.map((c) => `t.${c}`).join(', ')}, t.n
      FROM accepted a
     CROSS JOIN unnest(${ITEM_LINE_COLUMNS.map((c, k) => `$${FIRST_LINE + k}::${LINE_TYPES[c]}[]`).join(', ')})
           WITH ORDINALITY AS t(${ITEM_LINE_COLUMNS.join(', ')}, n)
     ORDER BY t.n),
  items AS (
    ${INSERT_NUMBERED_ITEMS})
  SELECT a.r, coalesce((SELECT json_agg(order_item_id ORDER BY n) FROM numbered), '[]') AS item_ids
    FROM accepted a`;

/** The items of the order `orderId` (an SQL expression) as one JSON array of StoredItem, by order_item_id. */
export const itemsJsonOf = (orderId: string): string =>
  `coalesce((SELECT json_agg(r ORDER BY r."orderItemId")
               FROM (SELECT ${itemFields('i')} FROM order_items i WHERE i.order_id = ${orderId}) r), '[]')`;

// The order and its items in one statement, hence one snapshot. Both as JSON of their rows (as the order
// functions return them): the statement's result type does not change when a column is added, so it is prepared
// once per connection (postgres.pool.ts prepares no statement with a `*`).
const ORDER_WITH_ITEMS = `SELECT row_to_json(o) AS r, ${itemsJsonOf('o.order_id')} AS items FROM orders o`;
const ORDER_WITH_ITEMS_SQL = `${ORDER_WITH_ITEMS} WHERE o.order_id = $1`;
const ORDERS_WITH_ITEMS_SQL = `${ORDER_WITH_ITEMS} WHERE o.order_id = ANY($1::bigint[])`;
// Each ask joined to its order by id and owner first: the items of another client's order are never read.
const OWNED_ORDERS_WITH_ITEMS_SQL = `
  SELECT DISTINCT ON (o.order_id) row_to_json(o) AS r, ${itemsJsonOf('o.order_id')} AS items
    FROM unnest($1::bigint[], $2::bigint[]) AS a(order_id, client_id)
    JOIN orders o ON o.order_id = a.order_id AND o.client_id = a.client_id`;

/** A row of ORDER_WITH_ITEMS: the order's row and its items, as JSON. */
interface JsonOrderWithItemsRow {
  r: OrderRow;
  items: StoredItem[];
}
const fromJson = ({ r, items }: JsonOrderWithItemsRow): OrderWithItems => ({
  order: toStoredOrder(r),
  items,
});

/** The order with its items (sorted by order_item_id), read in one snapshot; only the client's when given. */
export async function readOrder(
  db: Queryable,
  orderId: number,
  clientId: number | null = null,
): Promise<OrderWithItems | null> {
  if (!canBeId(orderId)) return null;
  const { rows } = await db.query<JsonOrderWithItemsRow>(
    clientId === null ? ORDER_WITH_ITEMS_SQL : `${ORDER_WITH_ITEMS_SQL} AND o.client_id = $2`,
    clientId === null ? [orderId] : [orderId, clientId],
  );
  const row = rows[0];
  return row ? fromJson(row) : null;
}

function acceptParams(order: NewOrder): unknown[] {
  const items = order.items;
  return [
    order.clientId,
    order.requestId,
    order.requestHash,
    order.referenceId,
    order.domain,
    order.currency,
    order.shippingMode,
    JSON.stringify(order.shipAddr),
    JSON.stringify(order.billAddr),
    order.cardId,
    order.totalMaxPriceCents,
    order.createdAt,
    items.length,
    ...ITEM_LINE_COLUMNS.map((column) => items.map((item) => item[fieldOf(column)])),
  ];
}

/** One acceptance on `db` (the pool, or a transaction's client): the insert, then the key's owner on a conflict. */
async function acceptOne(db: Queryable, order: NewOrder): Promise<AcceptResult> {
  const inserted = await db.query<{ r: OrderRow; item_ids: number[] }>(ACCEPT_SQL, acceptParams(order));
  const created = inserted.rows[0];
  if (created) {
    const stored = newOrderWithItems(created.r, order, created.item_ids);
    return { kind: 'created', orderId: stored.order.orderId, stored };
  }
  // A new statement under READ COMMITTED: it sees the row whose commit the insert waited for.
  const existing = await db.query<{ order_id: number; request_hash: string }>(
    'SELECT order_id, request_hash FROM orders WHERE client_id = $1 AND request_id = $2',
    [order.clientId, order.requestId],
  );
  const row = existing.rows[0];
  if (!row) throw new Error(`order of request ${order.requestId} conflicted but cannot be found`);
  return row.request_hash === order.requestHash
    ? { kind: 'duplicate', orderId: row.order_id }
    : { kind: 'conflict' };
}

/** The items of unsettled orders: an index-only sum over the partial index orders_unsettled_client. */
export const COUNT_UNSETTLED_SQL = `SELECT coalesce(sum(${ITEMS_OF_ORDER}), 0) AS n FROM orders o WHERE NOT settled`;
/** The items of a client's unsettled orders, over the same index. */
export const COUNT_UNSETTLED_OF_CLIENT_SQL = `${COUNT_UNSETTLED_SQL} AND client_id = $1`;

/** Accepting orders and reading them back. */
export function postgresOrders(pool: pg.Pool): OrderStore {
  return {
    accept(order) {
      return acceptOne(pool, order);
    },
    acceptMany(orders) {
      return orders.length === 0 ? Promise.resolve([]) : acceptOrderBatch(pool, orders);
    },
    // A commit returns once the server has flushed it (fsync and synchronous_commit on: docs/operating.md).
    async durable() {},
    get(orderId) {
      return readOrder(pool, orderId);
    },
    async getMany(orderIds) {
      const ids = [...new Set(orderIds)].filter(canBeId);
      if (ids.length === 0) return [];
      const { rows } = await pool.query<JsonOrderWithItemsRow>(ORDERS_WITH_ITEMS_SQL, [ids]);
      return rows.map(fromJson);
    },
    async getManyForClients(asks) {
      const owned = asks.filter((ask) => canBeId(ask.orderId));
      if (owned.length === 0) return [];
      const { rows } = await pool.query<JsonOrderWithItemsRow>(OWNED_ORDERS_WITH_ITEMS_SQL, [
        owned.map((ask) => ask.orderId),
        owned.map((ask) => ask.clientId),
      ]);
      return rows.map(fromJson);
    },
    async countUnsettled() {
      const { rows } = await pool.query<{ n: number }>(COUNT_UNSETTLED_SQL);
      return rows[0]?.n ?? 0;
    },
    async countUnsettledOfClient(clientId) {
      const { rows } = await pool.query<{ n: number }>(COUNT_UNSETTLED_OF_CLIENT_SQL, [clientId]);
      return rows[0]?.n ?? 0;
    },
    getForClient(clientId, orderId) {
      return readOrder(pool, orderId, clientId);
    },
    async phaseOf(orderId) {
      if (!canBeId(orderId)) return null;
      const { rows } = await pool.query<{ phase: OrderPhase }>(
        'SELECT phase FROM orders WHERE order_id = $1',
        [orderId],
      );
      return rows[0]?.phase ?? null;
    },
  };
}
