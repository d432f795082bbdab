import type {
  AcceptResult,
  NewOrder,
  OrderAsk,
  OrderStore,
  OrderWithItems,
  StoredItem,
} from '../port/store.port.js';
import { ITEM_COLUMNS, ITEM_LINE_COLUMNS, itemFields } from '../shared/item.columns.js';
import {
  newStoredItem,
  toStoredOrder,
  toStoredOrderFromJson,
  type OrderJsonRow,
  type OrderRow,
} from './sqlite.rows.js';
import { orderBatchAcceptor } from './order-batch.sqlite.js';
import type { Db } from './sqlite.db.js';
import { ITEMS_OF_ORDER } from './item-counts.sqlite.js';

/** The items of unsettled orders: a sum over the covering partial index orders_unsettled_client. */
export const COUNT_UNSETTLED_SQL = `SELECT total(${ITEMS_OF_ORDER}) FROM orders o WHERE phase <> 'settled'`;
/** The items of a client's unsettled orders, over the same index. */
export const COUNT_UNSETTLED_OF_CLIENT_SQL = `${COUNT_UNSETTLED_SQL} AND client_id = ?`;

/** An item's INSERT parameters, in its columns' order (ITEM_LINE_COLUMNS between the order's and the times). */
type InsertItemParams = [
  orderId: number,
  clientId: number,
  orderCreatedAt: number,
  lineNo: number,
  listingId: number,
  vendorId: number,
  title: string,
  isbn: string,
  lineQuantity: number,
  maxPriceCents: number | null,
  minDays: number | null,
  maxDays: number | null,
  costCents: number,
  updatedAt: number,
  statusChangedAt: number,
];

/** Accepting orders and reading one back. */
export function sqliteOrders(db: Db): OrderStore {
  // The new row as JSON text (rowAsJson): a third of the instructions of the row as an object.
  const insertOrder = db
    .prepare<[Record<string, unknown>], string>(
      `INSERT INTO orders (client_id, request_id, request_hash, reference_id, domain, currency, shipping_mode,
         ship_addr, bill_addr, card_id, total_max_price_cents, created_at, item_count)
       VALUES (@clientId, @requestId, @requestHash, @referenceId, @domain, @currency, @shippingMode,
         @shipAddr, @billAddr, @cardId, @totalMaxPriceCents, @createdAt, @itemCount)
       ON CONFLICT (client_id, request_id) DO NOTHING
       RETURNING ${rowAsJson(db, 'orders')}`,
    )
    .pluck();
  const byRequest = db.prepare<[number, string], Pick<OrderRow, 'order_id' | 'request_hash'>>(
    'SELECT order_id, request_hash FROM orders WHERE client_id = ? AND request_id = ?',
  );
  // Positional, returning the id alone: an item's row is what the order gave it (acceptOne), so a batch of 50,000
  // items makes no parameter object, returned row or strings read back per item for the collector.
  const insertItem = db
    .prepare<InsertItemParams, number>(
      `INSERT INTO order_items (order_id, client_id, order_created_at, ${ITEM_LINE_COLUMNS.join(', ')},
         shipcost_cents, tax_cents, status, updated_at, status_changed_at)
       VALUES (?, ?, ?, ${ITEM_LINE_COLUMNS.map(() => '?').join(', ')}, 0, 0, 1, ?, ?)
       RETURNING order_item_id`,
    )
    .pluck();
  const phaseOf = db.prepare<[number], { phase: OrderRow['phase'] }>(
    'SELECT phase FROM orders WHERE order_id = ?',
  );
  const countUnsettled = db.prepare<[], number>(COUNT_UNSETTLED_SQL).pluck();
  const countUnsettledOfClient = db.prepare<[number], number>(COUNT_UNSETTLED_OF_CLIENT_SQL).pluck();
  const read = orderReader(db);

  // The body of one acceptance, run inside the caller's transaction; a new order is answered from its inserts
  // (the order's row, the items' ids with the values they were given).
  const acceptOne = (order: NewOrder): AcceptResult => {
    const { items, ...head } = order;
    const insertedJson = insertOrder.get({
      ...head,
      shipAddr: JSON.stringify(order.shipAddr),
      billAddr: JSON.stringify(order.billAddr),
      itemCount: items.length,
    });
    if (insertedJson === undefined) {
      const existing = byRequest.get(order.clientId, order.requestId)!;
      return existing.request_hash === order.requestHash
        ? { kind: 'duplicate', orderId: existing.order_id }
        : { kind: 'conflict' };
    }
    const inserted = JSON.parse(insertedJson) as OrderJsonRow;
    const orderId = inserted.order_id;
    const { clientId, createdAt } = order;
    const stored = items.map((item) =>
      newStoredItem(
        insertItem.get(
          orderId,
          clientId,
          createdAt,
          item.lineNo,
          item.listingId,
          item.vendorId,
          item.title,
          item.isbn,
          item.lineQuantity,
          item.maxPriceCents,
          item.minDays,
          item.maxDays,
          item.costCents,
          createdAt,
          createdAt,
        )!,
        orderId,
        order,
        item,
      ),
    );
    return { kind: 'created', orderId, stored: { order: toStoredOrderFromJson(inserted), items: stored } };
  };
  const accept = db.transaction(acceptOne);
  const acceptMany = orderBatchAcceptor(db, acceptOne);
  // Two statements for a whole batch, the ids passed as one JSON array.
  const ordersIn = db.prepare<[string], OrderRow>(
    'SELECT * FROM orders WHERE order_id IN (SELECT value FROM json_each(?))',
  );
  const itemsIn = db.prepare<[string], StoredItem>(
    `SELECT ${itemFields('i')} FROM order_items i
      WHERE i.order_id IN (SELECT value FROM json_each(?)) ORDER BY i.order_id, i.order_item_id`,
  );
  const getMany = db.transaction((orderIds: readonly number[]): OrderWithItems[] => {
    const ids = JSON.stringify(orderIds);
    const found = new Map(
      ordersIn
        .all(ids)
        .map((row) => [row.order_id, { order: toStoredOrder(row), items: [] as StoredItem[] }]),
    );
    for (const item of itemsIn.all(ids)) found.get(item.orderId)?.items.push(item);
    return [...found.values()];
  });

  // The asked orders' rows first (one each), then the items of those that are the asking client's only.
  const getManyForClients = db.transaction((asks: readonly OrderAsk[]): OrderWithItems[] => {
    const owned = new Set(asks.map((ask) => `${ask.orderId}/${ask.clientId}`));
    const found = new Map(
      ordersIn
        .all(JSON.stringify(asks.map((ask) => ask.orderId)))
        .filter((row) => owned.has(`${row.order_id}/${row.client_id}`))
        .map((row) => [row.order_id, { order: toStoredOrder(row), items: [] as StoredItem[] }]),
    );
    if (found.size === 0) return [];
    for (const item of itemsIn.all(JSON.stringify([...found.keys()])))
      found.get(item.orderId)?.items.push(item);
    return [...found.values()];
  });

  return {
    async accept(order) {
      return accept.immediate(order);
    },
    async acceptMany(orders) {
      return acceptMany(orders);
    },
    // Nothing to run: flushedStore waits for the flush of the log after it, as after every operation.
    async durable() {},
    async get(orderId) {
      return read(orderId);
    },
    async getMany(orderIds) {
      return orderIds.length === 0 ? [] : getMany.deferred(orderIds.filter(Number.isSafeInteger));
    },
    async countUnsettled() {
      return countUnsettled.get() ?? 0;
    },
    async countUnsettledOfClient(clientId) {
      return countUnsettledOfClient.get(clientId) ?? 0;
    },
    async getForClient(clientId, orderId) {
      return read(orderId, clientId);
    },
    async getManyForClients(asks) {
      const valid = asks.filter((ask) => Number.isSafeInteger(ask.orderId));
      return valid.length === 0 ? [] : getManyForClients.deferred(valid);
    },
    async phaseOf(orderId) {
      return phaseOf.get(orderId)?.phase ?? null;
    },
  };
}

/**
 * The order and its items in one statement, so one snapshot without a transaction: the order's row as a JSON
 * object (its columns as the schema lists them) and its items as an array of StoredItem objects (their columns
 * as item.columns.ts names them), each by SQLite's json_object, parsed by JSON.parse. Instructions per read
 * (callgrind): better-sqlite3 builds a row,
 * as an array or as an object, one property at a time through V8's generic setter, about 1,000 instructions per
 * column, and naming an array's columns in JavaScript took each object through a map per property; JSON.parse
 * builds the objects in their final shapes at once: about half the instructions of the join read as arrays.
 */
export function orderReader(db: Db) {
  const sql = `SELECT json_array(${rowAsJson(db, 'orders', 'o.')},
                 (SELECT json_group_array(json_object(${ITEM_JSON}) ORDER BY i.order_item_id)
                    FROM order_items i WHERE i.order_id = o.order_id))
                 FROM orders o WHERE o.order_id = ?`;
  const orderWithItems = db.prepare<[number], string>(sql).pluck();
  // The owner compared on the order's row, before any item is read: another client's order costs nothing more.
  const ownedOrderWithItems = db.prepare<[number, number], string>(`${sql} AND o.client_id = ?`).pluck();
  /** The order with its items; only when it is `clientId`'s, when given. */
  return (orderId: number, clientId?: number): OrderWithItems | null => {
    const found =
      clientId === undefined ? orderWithItems.get(orderId) : ownedOrderWithItems.get(orderId, clientId);
    if (found === undefined) return null;
    const [order, items] = JSON.parse(found) as [OrderJsonRow, StoredItem[]];
    return { order: toStoredOrderFromJson(order), items };
  };
}

/** An item's columns as the pairs of json_object, each under its field: the object JSON.parse gives is a StoredItem. */
const ITEM_JSON = ITEM_COLUMNS.map(([column, field]) => `'${field}', i.${column}`).join(', ');

/**
 * A row of `table` as one JSON object, every column of the schema under its name (`prefix`: the table's alias
 * and a dot, or nothing in a RETURNING clause): read as text and JSON.parse'd, it costs a fraction of the
 * instructions of better-sqlite3's row object, built one property at a time (orderReader). Columns that hold
 * JSON text (an order's addresses) are embedded as JSON, so one parse gives their objects too.
 */
function rowAsJson(db: Db, table: string, prefix = ''): string {
  const columns = db.pragma(`table_info(${table})`) as { name: string }[];
  const value = (name: string) => (JSON_COLUMNS.has(name) ? `json(${prefix}${name})` : `${prefix}${name}`);
  return `json_object(${columns.map(({ name }) => `'${name}', ${value(name)}`).join(', ')})`;
}

/** The columns whose text is JSON, written by JSON.stringify (the order's addresses). */
const JSON_COLUMNS: ReadonlySet<string> = new Set(['ship_addr', 'bill_addr']);
