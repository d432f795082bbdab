/** Part of the store port (../store.port.ts): orders and their items, as acceptance stores them. */
import type { ItemStatusCode } from '../../domain/item-status.js';
import type { Currency } from '../../domain/money.js';
import type { ShippingMode } from '../../domain/pricing.js';

/** queued: nothing taken; reserved: stock taken and amount fixed, payment pending; settled: final. */
export type OrderPhase = 'queued' | 'reserved' | 'settled';

export interface OrderAddress {
  name: string;
  address1: string;
  address2?: string | null;
  city: string;
  provstate?: string | null;
  country: string;
  zipcode: string;
  phone: string;
}

export interface StoredOrder {
  orderId: number;
  clientId: number;
  requestId: string;
  requestHash: string;
  referenceId: string | null;
  domain: string;
  currency: Currency;
  shippingMode: ShippingMode;
  shipAddr: OrderAddress;
  billAddr: OrderAddress;
  cardId: number;
  totalMaxPriceCents: number | null;
  taxCents: number | null;
  taxModel: string | null;
  totalCents: number | null;
  phase: OrderPhase;
  attempts: number;
  /** Until when the last attempt within the limit may still be working on the order (it may be paying). */
  leaseUntil: number | null;
  createdAt: number;
}

/** One copy of a listing in an order. The line fields are the listing as ordered, copied once. */
export interface StoredItem {
  orderItemId: number;
  orderId: number;
  clientId: number;
  orderCreatedAt: number;
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
  taxCents: number;
  status: ItemStatusCode;
  updatedAt: number;
  statusChangedAt: number;
  shippingCompany: string | null;
  trackingId: string | null;
  extraShippingCents: number | null;
}

/** An order with all its items, sorted by orderItemId. */
export interface OrderWithItems {
  order: StoredOrder;
  items: StoredItem[];
}

/** The fields of an order that its OrderResponse shows: all a search reads. */
export type OrderView = Pick<
  StoredOrder,
  'orderId' | 'createdAt' | 'currency' | 'taxCents' | 'taxModel' | 'referenceId'
>;

/** An item's line: the listing as ordered (copied once for each of its items), and the item's cost. */
type ItemLine = Pick<
  StoredItem,
  | 'lineNo'
  | 'listingId'
  | 'vendorId'
  | 'title'
  | 'isbn'
  | 'lineQuantity'
  | 'minDays'
  | 'maxDays'
  | 'costCents'
>;

/** The fields of an item that its OrderResponse shows, and orderId to group by. */
export type ItemView = ItemLine &
  Pick<
    StoredItem,
    'orderItemId' | 'orderId' | 'shipcostCents' | 'status' | 'updatedAt' | 'shippingCompany' | 'trackingId'
  >;

/** An item as acceptance stores it: its line and its limit, before any attempt. */
export type NewOrderItem = ItemLine & Pick<StoredItem, 'maxPriceCents'>;

/** An order as acceptance stores it: the fields of a StoredOrder that exist before any attempt. */
export interface NewOrder extends Pick<
  StoredOrder,
  | 'clientId'
  | 'requestId'
  | 'requestHash'
  | 'referenceId'
  | 'domain'
  | 'currency'
  | 'shippingMode'
  | 'shipAddr'
  | 'billAddr'
  | 'cardId'
  | 'totalMaxPriceCents'
  | 'createdAt'
> {
  /** Every item QUEUED, in request order. */
  items: NewOrderItem[];
}

/**
 * created: stored now, with the order and its items as the acceptance stored them (what `get` would read just
 * after its commit); duplicate: the same request was stored before; conflict: the request id was used for another.
 */
export type AcceptResult =
  | { kind: 'created'; orderId: number; stored: OrderWithItems }
  | { kind: 'duplicate'; orderId: number }
  | { kind: 'conflict' };

/** An order asked for by a client. */
export interface OrderAsk {
  clientId: number;
  orderId: number;
}

export interface OrderStore {
  /**
   * Records an order and its QUEUED items in one transaction, unique on (client, request id). Resolves once the
   * transaction has committed (every process reads it), which is not yet once it is on the disk: anything told
   * from its result (an answer, a duplicate, a conflict) waits for `durable()` first. Enqueuing the order's job
   * need not: a job only names the order, and the worker makes its own writes durable, which covers the
   * acceptance, before it pays a processor outside the store or announces anything (docs/operating.md, "Durable
   * on one host").
   */
  accept(order: NewOrder): Promise<AcceptResult>;
  /**
   * Accepts each order as `accept` would, all in one transaction (a failure stores none); one result per
   * order, in the same order. Concurrent duplicates still create one order. Durable as `accept` is.
   */
  acceptMany(orders: readonly NewOrder[]): Promise<AcceptResult[]>;
  /**
   * Resolves once everything this process has committed or read so far survives a power cut, the acceptances
   * and an attempt's count and reservation (ProcessingStore) among it, which resolve before: at once on
   * PostgreSQL (its commit returned once the server had flushed it); on SQLite once a flush of the log that
   * began after those commits has returned.
   */
  durable(): Promise<void>;
  get(orderId: number): Promise<OrderWithItems | null>;
  /** The orders that exist among `orderIds`, each with its items, read in one snapshot; in no given order. */
  getMany(orderIds: readonly number[]): Promise<OrderWithItems[]>;
  /** How many accepted orders are not settled yet (queued or reserved): the backpressure figure. */
  countUnsettled(): Promise<number>;
  /** How many of the client's accepted orders are not settled yet: its share of the backlog. */
  countUnsettledOfClient(clientId: number): Promise<number>;
  /**
   * The order only when it belongs to the client. The owner is compared before the items are read: another
   * client's order costs what a missing one costs (its size tells nothing).
   */
  getForClient(clientId: number, orderId: number): Promise<OrderWithItems | null>;
  /**
   * `getForClient` for several asks at once, in one snapshot: the orders among them that belong to the client
   * asking (each once, in no given order), another client's order costing what a missing one costs.
   */
  getManyForClients(asks: readonly OrderAsk[]): Promise<OrderWithItems[]>;
  phaseOf(orderId: number): Promise<OrderPhase | null>;
}
