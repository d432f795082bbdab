import type pg from 'pg';
import type { AcceptResult, NewOrder, OrderWithItems } from '../store.port.js';
import { withTransaction, type Queryable } from './postgres.pool.js';
import { toStoredItem, toStoredOrder, type ItemRow, type OrderRow } from './postgres.rows.js';

// Every order of a batch in one statement, in (client, request id) order: two batches that share keys take
// their locks in the same order and wait for each other instead of deadlocking. A key stored before, or by a
// concurrent transaction (whose commit the insert waits for), inserts nothing and returns nothing.
const INSERT_ORDERS_SQL = `
  INSERT INTO orders (client_id, request_id, request_hash, reference_id, domain, currency, shipping_mode,
    ship_addr, bill_addr, card_id, total_max_price_cents, created_at)
  SELECT t.client_id, t.request_id, t.request_hash, t.reference_id, t.domain, t.currency, t.shipping_mode,
         t.ship_addr, t.bill_addr, t.card_id, t.total_max_price_cents, t.created_at
    FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                $8::jsonb[], $9::jsonb[], $10::bigint[], $11::bigint[], $12::bigint[]) WITH ORDINALITY
         AS t(client_id, request_id, request_hash, reference_id, domain, currency, shipping_mode, ship_addr,
              bill_addr, card_id, total_max_price_cents, created_at, n)
   ORDER BY t.n
  ON CONFLICT (client_id, request_id) DO NOTHING
  RETURNING *`;

// Items in request order, so that each order's item ids follow its listings as the single accept gives them;
// returned, so that a new order is answered without reading it back.
const INSERT_ITEMS_SQL = `
  INSERT INTO order_items (order_id, client_id, order_created_at, line_no, listing_id, vendor_id, title, isbn,
    line_quantity, max_price_cents, min_days, max_days, cost_cents, updated_at, status_changed_at)
  SELECT t.order_id, t.client_id, t.created_at, t.line_no, t.listing_id, t.vendor_id, t.title, t.isbn,
         t.line_quantity, t.max_price_cents, t.min_days, t.max_days, t.cost_cents, t.created_at, t.created_at
    FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::int[], $5::bigint[], $6::bigint[], $7::text[],
                $8::text[], $9::int[], $10::bigint[], $11::int[], $12::int[], $13::bigint[]) WITH ORDINALITY
         AS t(order_id, client_id, created_at, line_no, listing_id, vendor_id, title, isbn, line_quantity,
              max_price_cents, min_days, max_days, cost_cents, n)
   ORDER BY t.n
  RETURNING *`;

// A new statement under READ COMMITTED: it sees the rows whose commit the insert waited for.
const EXISTING_SQL = `
  SELECT o.order_id, o.client_id, o.request_id, o.request_hash
    FROM orders o JOIN unnest($1::bigint[], $2::text[]) AS k(client_id, request_id) USING (client_id, request_id)`;

const keyOf = (o: { clientId: number; requestId: string }): string => `${o.clientId}\u0000${o.requestId}`;
const byKey = (a: NewOrder, b: NewOrder): number =>
  a.clientId - b.clientId || (a.requestId < b.requestId ? -1 : a.requestId > b.requestId ? 1 : 0);

/**
 * Accepts a batch in one transaction of three statements (orders, their items, the keys found stored), each
 * order as the single accept would: created, a duplicate of the stored order with its hash, or a conflict.
 */
export function acceptOrderBatch(pool: pg.Pool, orders: readonly NewOrder[]): Promise<AcceptResult[]> {
  const firsts = new Map<string, NewOrder>();
  for (const order of orders) if (!firsts.has(keyOf(order))) firsts.set(keyOf(order), order);
  const unique = [...firsts.values()].sort(byKey);
  return withTransaction(pool, async (tx) => {
    const created = await insertOrders(tx, unique);
    await insertItems(tx, unique, created);
    const stored = await existing(
      tx,
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
  });
}

/** The new orders by key, their items still to come; keys already stored are absent. */
async function insertOrders(
  tx: Queryable,
  orders: readonly NewOrder[],
): Promise<Map<string, OrderWithItems>> {
  const column = <T>(pick: (o: NewOrder) => T): T[] => orders.map(pick);
  const { rows } = await tx.query<OrderRow>(INSERT_ORDERS_SQL, [
    column((o) => o.clientId),
    column((o) => o.requestId),
    column((o) => o.requestHash),
    column((o) => o.referenceId),
    column((o) => o.domain),
    column((o) => o.currency),
    column((o) => o.shippingMode),
    column((o) => JSON.stringify(o.shipAddr)),
    column((o) => JSON.stringify(o.billAddr)),
    column((o) => o.cardId),
    column((o) => o.totalMaxPriceCents),
    column((o) => o.createdAt),
  ]);
  return new Map(
    rows.map((r) => [
      keyOf({ clientId: r.client_id, requestId: r.request_id }),
      { order: toStoredOrder(r), items: [] },
    ]),
  );
}

/** The items of the orders just created, every one QUEUED, added to their orders as stored. */
async function insertItems(
  tx: Queryable,
  orders: readonly NewOrder[],
  created: Map<string, OrderWithItems>,
): Promise<void> {
  const items = orders.flatMap((order) => {
    const orderId = created.get(keyOf(order))?.order.orderId;
    return orderId === undefined ? [] : order.items.map((item) => ({ ...item, order, orderId }));
  });
  if (items.length === 0) return;
  const column = <T>(pick: (i: (typeof items)[number]) => T): T[] => items.map(pick);
  const { rows } = await tx.query<ItemRow>(INSERT_ITEMS_SQL, [
    column((i) => i.orderId),
    column((i) => i.order.clientId),
    column((i) => i.order.createdAt),
    column((i) => i.lineNo),
    column((i) => i.listingId),
    column((i) => i.vendorId),
    column((i) => i.title),
    column((i) => i.isbn),
    column((i) => i.lineQuantity),
    column((i) => i.maxPriceCents),
    column((i) => i.minDays),
    column((i) => i.maxDays),
    column((i) => i.costCents),
  ]);
  const byOrder = new Map([...created.values()].map((o) => [o.order.orderId, o.items]));
  for (const row of rows) byOrder.get(row.order_id)!.push(toStoredItem(row));
  for (const items of byOrder.values()) items.sort((a, b) => a.orderItemId - b.orderItemId);
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
