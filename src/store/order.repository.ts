import type { Db } from './db.js';
import type { OrderItemRow, OrderRow } from './order.rows.js';

export interface StoredOrder {
  order: OrderRow;
  items: OrderItemRow[];
}

export interface NewOrderItem {
  lineNo: number;
  listingId: number;
  vendorId: number;
  title: string;
  isbn: string;
  lineQuantity: number;
  maxPriceCents: number | null;
  minDays: number | null;
  maxDays: number | null;
  costCents: number;
  shipcostCents: number;
}

export interface NewOrder {
  clientId: number;
  requestId: string;
  requestHash: string;
  referenceId: string | null;
  domain: string;
  currency: string;
  shippingMode: 'S' | 'P';
  shipAddr: unknown;
  billAddr: unknown;
  cardId: number;
  totalMaxPriceCents: number | null;
  taxCents: number | null;
  taxModel: string | null;
  createdAt: number;
  items: NewOrderItem[];
}

export type AcceptResult =
  { kind: 'created'; orderId: number } | { kind: 'duplicate'; orderId: number } | { kind: 'conflict' };

export type OrderRepository = ReturnType<typeof createOrderRepository>;

/** Accepting orders and reading one back. */
export function createOrderRepository(db: Db) {
  const insertOrder = db.prepare(
    `INSERT INTO orders (client_id, request_id, request_hash, reference_id, domain, currency, shipping_mode,
       ship_addr, bill_addr, card_id, total_max_price_cents, tax_cents, tax_model, created_at)
     VALUES (@clientId, @requestId, @requestHash, @referenceId, @domain, @currency, @shippingMode,
       @shipAddr, @billAddr, @cardId, @totalMaxPriceCents, @taxCents, @taxModel, @createdAt)
     ON CONFLICT (client_id, request_id) DO NOTHING`,
  );
  const byRequest = db.prepare<[number, string], Pick<OrderRow, 'order_id' | 'request_hash'>>(
    'SELECT order_id, request_hash FROM orders WHERE client_id = ? AND request_id = ?',
  );
  const insertItem = db.prepare(
    `INSERT INTO order_items (order_id, client_id, order_created_at, line_no, listing_id, vendor_id, title, isbn,
       line_quantity, max_price_cents, min_days, max_days, cost_cents, shipcost_cents, status, updated_at,
       status_changed_at)
     VALUES (@orderId, @clientId, @createdAt, @lineNo, @listingId, @vendorId, @title, @isbn, @lineQuantity,
       @maxPriceCents, @minDays, @maxDays, @costCents, @shipcostCents, 1, @createdAt, @createdAt)`,
  );
  const orderForClient = db.prepare<[number, number], OrderRow>(
    'SELECT * FROM orders WHERE order_id = ? AND client_id = ?',
  );
  const orderById = db.prepare<[number], OrderRow>('SELECT * FROM orders WHERE order_id = ?');
  const phaseOf = db.prepare<[number], { phase: OrderRow['phase'] }>(
    'SELECT phase FROM orders WHERE order_id = ?',
  );
  const itemsOf = db.prepare<[number], OrderItemRow>(
    'SELECT * FROM order_items WHERE order_id = ? ORDER BY order_item_id',
  );

  const accept = db.transaction((order: NewOrder): AcceptResult => {
    const inserted = insertOrder.run({
      ...order,
      shipAddr: JSON.stringify(order.shipAddr),
      billAddr: JSON.stringify(order.billAddr),
    });
    if (inserted.changes === 0) {
      const existing = byRequest.get(order.clientId, order.requestId)!;
      return existing.request_hash === order.requestHash
        ? { kind: 'duplicate', orderId: existing.order_id }
        : { kind: 'conflict' };
    }
    const orderId = Number(inserted.lastInsertRowid);
    for (const item of order.items) {
      insertItem.run({ ...item, orderId, clientId: order.clientId, createdAt: order.createdAt });
    }
    return { kind: 'created', orderId };
  });

  return {
    /** Records an order and its QUEUED items in one transaction, or finds the order of the same request. */
    accept(order: NewOrder): Promise<AcceptResult> {
      return Promise.resolve(accept.immediate(order));
    },
    /** The order with its items, only when it belongs to the client. */
    getForClient(clientId: number, orderId: number): Promise<StoredOrder | null> {
      const order = orderForClient.get(orderId, clientId);
      return Promise.resolve(order ? { order, items: itemsOf.all(orderId) } : null);
    },
    phaseOf(orderId: number): OrderRow['phase'] | null {
      return phaseOf.get(orderId)?.phase ?? null;
    },
    get(orderId: number): Promise<StoredOrder | null> {
      const order = orderById.get(orderId);
      return Promise.resolve(order ? { order, items: itemsOf.all(orderId) } : null);
    },
  };
}
