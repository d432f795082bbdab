/**
 * The store port: the domain operations every process needs of its database, each atomic, each a Promise of
 * plain camelCase objects. Services decide; an adapter (sqlite/, postgres/) applies a decision in one
 * transaction and reports what it found. Nothing here names a driver, a row or a SQL type.
 */
import type { ItemStatusCode, LedgerKind } from '../domain/item-status.js';
import type { Currency } from '../domain/money.js';
import type { PricingListing, PricingVendor, ShippingMode, ShippingRate, Zone } from '../domain/pricing.js';
import type { Sealer } from '../domain/secrets.js';

// ---- clients and cards ----------------------------------------------------------------------------------

export interface Client {
  clientId: number;
  name: string;
  accessKey: string;
  secretKey: string;
  disabled: boolean;
}

/** A stored card: the store keeps only a keyed hash of its token, so it never gives the token back. */
export interface Card {
  cardId: number;
  clientId: number;
  declines: boolean;
  active: boolean;
}

/** A card just added, with its token in clear this once. */
export interface NewCard extends Card {
  token: string;
}

/**
 * Clients and cards. Secret keys are stored sealed under SECRETS_KEY and card tokens as keyed hashes; the
 * port takes and gives them in clear.
 */
export interface ClientStore {
  findByAccessKey(accessKey: string): Promise<Client | null>;
  /** Stores a client with the keys the caller generated. */
  create(client: { name: string; accessKey: string; secretKey: string; now: number }): Promise<Client>;
  /** The client after disabling it; null when no client has that key. */
  disable(accessKey: string): Promise<Client | null>;
  addCard(card: { clientId: number; token: string; declines: boolean; now: number }): Promise<NewCard>;
  findCard(token: string): Promise<Card | null>;
  findCardById(cardId: number): Promise<Card | null>;
  /**
   * Re-seals every secret key (and the token-hashing key) under `next` in one transaction. This store is
   * under `next` afterwards; other processes must restart with it.
   */
  rotateSecrets(next: Sealer): Promise<{ clients: number; cards: number }>;
}

// ---- catalog --------------------------------------------------------------------------------------------

export interface CatalogVendor {
  vendorId: number;
  name: string;
  country: string;
  currency: Currency;
  rates: { mode: ShippingMode; zone: Zone; rate: ShippingRate }[];
}

export interface CatalogListing {
  listingId: number;
  vendorId: number;
  title: string;
  isbn: string;
  priceCents: number;
  quantity: number;
}

/** The listings asked for that exist, with current stock, and their vendors with rates, as pricing reads them. */
export interface PricingCatalog {
  listings: Map<number, PricingListing>;
  vendors: Map<number, PricingVendor>;
}

export interface CatalogStore {
  loadForPricing(listingIds: readonly number[]): Promise<PricingCatalog>;
  /** Upserts a whole validated catalog in one transaction; a vendor's rates are replaced by the file's. */
  importCatalog(vendors: readonly CatalogVendor[], listings: readonly CatalogListing[]): Promise<void>;
  vendorExists(vendorId: number): Promise<boolean>;
  /** False when there is no such vendor. */
  deactivateVendor(vendorId: number): Promise<boolean>;
}

// ---- orders and items -----------------------------------------------------------------------------------

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
  status: number;
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

/** The fields of an item that its OrderResponse shows, and orderId to group by. */
export type ItemView = Pick<
  StoredItem,
  | 'orderItemId'
  | 'orderId'
  | 'lineNo'
  | 'listingId'
  | 'vendorId'
  | 'title'
  | 'isbn'
  | 'lineQuantity'
  | 'minDays'
  | 'maxDays'
  | 'costCents'
  | 'shipcostCents'
  | 'status'
  | 'updatedAt'
  | 'shippingCompany'
  | 'trackingId'
>;

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
}

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

/** created: stored now; duplicate: the same request was stored before; conflict: the request id was used for another. */
export type AcceptResult =
  { kind: 'created'; orderId: number } | { kind: 'duplicate'; orderId: number } | { kind: 'conflict' };

export interface OrderStore {
  /** Records an order and its QUEUED items in one transaction, unique on (client, request id). */
  accept(order: NewOrder): Promise<AcceptResult>;
  /**
   * Accepts each order as `accept` would, all in one transaction (a failure stores none); one result per
   * order, in the same order. Concurrent duplicates still create one order.
   */
  acceptMany(orders: readonly NewOrder[]): Promise<AcceptResult[]>;
  get(orderId: number): Promise<OrderWithItems | null>;
  /** The orders that exist among `orderIds`, each with its items, read in one snapshot; in no given order. */
  getMany(orderIds: readonly number[]): Promise<OrderWithItems[]>;
  /** How many accepted orders are not settled yet (queued or reserved): the backpressure figure. */
  countUnsettled(): Promise<number>;
  /** How many of the client's accepted orders are not settled yet: its share of the backlog. */
  countUnsettledOfClient(clientId: number): Promise<number>;
  /** The order only when it belongs to the client. */
  getForClient(clientId: number, orderId: number): Promise<OrderWithItems | null>;
  phaseOf(orderId: number): Promise<OrderPhase | null>;
}

// ---- processing: the worker's atomic steps --------------------------------------------------------------

export interface StockChange {
  listingId: number;
  copies: number;
}

/** What a priced attempt writes: each item's figures and status, the stock it takes, the order's totals. */
export interface Reservation {
  orderId: number;
  /** Every item of the order; a status other than QUEUED rejects it (stock is not taken for it). */
  items: {
    orderItemId: number;
    costCents: number;
    shipcostCents: number;
    taxCents: number;
    minDays: number | null;
    maxDays: number | null;
    status: ItemStatusCode;
  }[];
  /** Taken all or nothing, each guarded by `stock >= copies`. */
  take: StockChange[];
  /** 'reserved' when something is bought and a payment follows, else 'settled'. */
  phase: 'reserved' | 'settled';
  taxCents: number | null;
  taxModel: string | null;
  totalCents: number;
  now: number;
  /** Set when the reservation moves an item out of QUEUED: the order event recorded with it. */
  event?: OrderEventWrite;
}

/** not-queued: another attempt reserved or settled it first; short: a listing no longer has the stock. */
export type ReserveResult = 'applied' | 'not-queued' | 'short';

/** Every kind of ledger entry: the worker's authorisation or decline, and the moves' adjustments. */
export type LedgerEntryKind = 'authorize' | 'decline' | LedgerKind;

export interface LedgerWrite {
  entryKey: string;
  orderId: number;
  orderItemId: number | null;
  kind: LedgerEntryKind;
  amountCents: number;
  currency: string;
}

/** How an order leaves the unsettled phases: its QUEUED items all move to `itemStatus`. */
export interface Settlement {
  orderId: number;
  /** Applied only while the order is still in this phase. */
  fromPhase: 'queued' | 'reserved';
  itemStatus: ItemStatusCode;
  /** Rejected items keep their cost but lose their shipping and tax shares. */
  clearCharges: boolean;
  /** The order's tax becomes 0 (where it had one): nothing was bought. */
  zeroTax: boolean;
  /** Stock the reservation had taken, given back. */
  giveBack: StockChange[];
  ledger: LedgerWrite | null;
  now: number;
  /** When set, applied only if no attempt holds a lease on the order beyond this time. */
  leaseFreeAt?: number;
  /** The order event recorded with the settlement. */
  event?: OrderEventWrite;
  /** Given up on (FAILED): whatever the gateway holds for the order must go back, so its payment version moves on. */
  releasePayment?: boolean;
}

/** An order as an attempt found it; `catalog` is what pricing needs when the attempt is to reserve it. */
export interface AttemptStart extends OrderWithItems {
  catalog: PricingCatalog | null;
}

/** An attempt's start and, when it was given a pricing and was to reserve, what became of the reservation. */
export interface AttemptBegun extends AttemptStart {
  /** 'short': a listing no longer had the stock; nothing of the reservation was written, the count was. */
  reserved: 'applied' | 'short' | null;
}

export interface ProcessingStore {
  /**
   * Counts an attempt at an unsettled order and returns it with its items as they stand after the count; an
   * attempt within `maxAttempts` takes the lease until `leaseUntil`. A settled order is returned as it is,
   * uncounted. Null when there is no such order. When the counted attempt is to reserve the order (still
   * queued, within its attempts), the pricing catalog of its listings is read in the same transaction and, with
   * `price`, the reservation it returns is applied there too, as `reserve` would (all of it or none).
   */
  beginAttempt(
    orderId: number,
    lease: { leaseUntil: number; maxAttempts: number },
    price?: (start: AttemptStart & { catalog: PricingCatalog }) => Reservation,
  ): Promise<AttemptBegun | null>;
  /** Applies a priced attempt while the order is still queued, taking every stock change or none. */
  reserve(reservation: Reservation): Promise<ReserveResult>;
  /** Settles the order while it is still in `fromPhase` (and its lease allows); false when it no longer is. */
  settle(settlement: Settlement): Promise<boolean>;
  /** Whether the ledger holds the entry: an authorisation the ledger knows is accounted for. */
  ledgerHas(entryKey: string): Promise<boolean>;
}

// ---- item moves and the payment outbox ------------------------------------------------------------------

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

// ---- what the gateway must hold for an order ------------------------------------------------------------

/**
 * An order's payment as its ledger says it must stand. `version` moves on, under the order's row lock, with
 * every change of what the gateway must hold (an adjustment entry, the order given up on); `amountCents` is
 * authorize + extra_shipping − void − refund over the ledger in the same snapshot. The gateway is brought to
 * (amount, version) and keeps the highest version it was told, so calls arriving in any order, any number of
 * times, converge on the last one.
 */
export interface PaymentTarget {
  orderId: number;
  cardId: number;
  currency: Currency;
  amountCents: number;
  version: number;
  /** The highest version the gateway confirmed; the payment is pending while it is below `version`. */
  appliedVersion: number;
}

export interface LedgerStore {
  paymentTarget(orderId: number): Promise<PaymentTarget | null>;
  /** Records that the gateway holds `version` (or a later one); never moves backwards. */
  markPaymentApplied(orderId: number, version: number): Promise<void>;
}

// ---- the sandbox payment processor's own records --------------------------------------------------------

export interface PaymentRecord {
  status: 'authorized' | 'declined';
  amountCents: number;
}

/** What a `settleTo` call did: see PaymentGateway.settleTo. */
/** What the processor's authorisation under `key` is to be brought to: the ledger's amount at its version. */
export interface GatewayTarget {
  key: string;
  cardId: number;
  currency: string;
  amountCents: number;
  version: number;
}

export type SettleToResult = 'applied' | 'superseded' | 'not-authorised';

export interface PaymentStore {
  /** Records the first outcome for `key` and returns whichever outcome is stored for it. */
  authorizeOnce(request: {
    key: string;
    cardId: number;
    currency: string;
    amountCents: number;
    approved: boolean;
    now: number;
  }): Promise<PaymentRecord>;
  /**
   * Sets the payment under `key` to `amountCents` at `version` unless it holds that version or a later one
   * ('superseded'). A key with no authorisation: a target of 0 is recorded as a declined payment, so that an
   * authorisation arriving later under the key is declined; a target above 0 is 'not-authorised'.
   */
  settleTo(request: GatewayTarget & { now: number }): Promise<SettleToResult>;
  find(key: string): Promise<PaymentRecord | null>;
}

// ---- reconciliation -------------------------------------------------------------------------------------

export interface StaleOrder {
  orderId: number;
  attempts: number;
  createdAt: number;
}

export interface StaleItem {
  orderItemId: number;
  orderId: number;
  status: ItemStatusCode;
  statusChangedAt: number;
}

/** Where the previous batch ended: batches are keyset-paged so a row that stays put is read once. */
export interface StaleOrderKey {
  createdAt: number;
  orderId: number;
}
export interface StaleItemKey {
  statusChangedAt: number;
  orderItemId: number;
}

export interface ReconcileStore {
  /** Unsettled orders accepted before `createdBefore`, oldest first. */
  staleOrders(createdBefore: number, limit: number, after?: StaleOrderKey): Promise<StaleOrder[]>;
  /** Items in `status` since before `changedBefore`, longest waiting first. */
  staleItems(
    status: ItemStatusCode,
    changedBefore: number,
    limit: number,
    after?: StaleItemKey,
  ): Promise<StaleItem[]>;
  /** Orders whose payment version the gateway has not confirmed yet, by order id. */
  pendingPayments(limit: number, afterOrderId?: number): Promise<number[]>;
}

// ---- search ---------------------------------------------------------------------------------------------

export type SortOrder = 'ascending' | 'descending';

/** Where an order sits in a result: by createDate, then orderId. */
export interface OrderKey {
  createdAt: number;
  orderId: number;
}

/** A search with every default resolved (epoch ms, ranges inclusive start, exclusive end); applied literally. */
export interface SearchCriteria {
  dateStart: number;
  dateEnd: number;
  itemUpdateStart?: number;
  itemUpdateEnd?: number;
  vendorId?: number;
  referenceId?: string;
  orderIds?: readonly number[];
  orderItemIds?: readonly number[];
  sortOrder: SortOrder;
  limit: number;
  /** Continue strictly after this key (keyset paging). */
  after?: OrderKey;
}

export interface SearchPage {
  /** Each order with only the items matching the item criteria, sorted by orderItemId; read in one snapshot. */
  orders: { order: OrderView; items: ItemView[] }[];
  more: boolean;
}

export interface SearchCursor {
  cursorId: number;
  clientId: number;
  criteriaHash: string;
  dateStart: number;
  dateEnd: number;
  after: OrderKey;
  createdAt: number;
}

export interface SearchStore {
  /** One page of the client's orders matching the criteria, and whether more follow. */
  search(clientId: number, criteria: SearchCriteria): Promise<SearchPage>;
  /** Stores a cursor under a fresh random id and returns it; cursors created before `expiredBefore` are dropped. */
  issueCursor(cursor: Omit<SearchCursor, 'cursorId'>, expiredBefore: number): Promise<number>;
  /** The cursor, only when this client was given it at or after `issuedSince`. */
  findCursor(cursorId: number, clientId: number, issuedSince: number): Promise<SearchCursor | null>;
}

// ---- order events and webhooks --------------------------------------------------------------------------

/**
 * An event to record in the transaction of the change it reports: the adapter counts one more in the order's
 * sequence, keeps the order as it stands after the change, and adds a pending delivery for every active
 * webhook of the order's client.
 */
export interface OrderEventWrite {
  /** `evt_…`, chosen by the service. */
  eventId: string;
}

/** A recorded event: the order as GET showed it right after the change. */
export interface OrderEvent {
  eventId: string;
  orderId: number;
  clientId: number;
  /** 1 for the order's first event, one more for each later one. */
  sequence: number;
  createdAt: number;
  order: OrderView;
  /** Every item of the order, sorted by orderItemId. */
  items: ItemView[];
}

export interface Webhook {
  webhookId: number;
  clientId: number;
  url: string;
  active: boolean;
  /** A delivery was given up on after its last attempt; the next delivery that succeeds clears it. */
  failing: boolean;
}

/** A webhook with the key of its signatures, in clear. */
export interface WebhookWithSecret extends Webhook {
  secret: string;
}

/** The next attempt of a pending delivery, as the relay hands it to the queue. */
export interface DeliveryAttempt {
  deliveryId: number;
  /** The webhook it goes to: its endpoint's share of the workers is counted by it. */
  webhookId: number;
  /** 1 for the first attempt. */
  attempt: number;
  /** Not to be made before. */
  dueAt: number;
}

/** dropped: its webhook was removed before it was delivered. */
export type DeliveryState = 'pending' | 'delivered' | 'failed' | 'dropped';

/** What one attempt needs: the delivery as it stands, its webhook with its secret, and its event. */
export interface DeliveryTarget {
  deliveryId: number;
  state: DeliveryState;
  /** Attempts made so far. */
  attempts: number;
  webhook: WebhookWithSecret;
  event: OrderEvent;
}

/**
 * How a claim of an attempt ended. claimed: the attempt is the caller's to make; its request may start until the
 * claim's end. dropped: the webhook is removed or inactive, so the delivery is now dropped and nothing is to be
 * sent. stale: the delivery is no longer at that attempt, or another claim of it is still running.
 */
export type ClaimOutcome =
  { kind: 'claimed'; target: DeliveryTarget } | { kind: 'dropped' } | { kind: 'stale' };

/** How an attempt ended: delivered, to be made again at `retryAt`, or the last one (the webhook is failing). */
export type AttemptOutcome =
  | { kind: 'delivered' }
  | { kind: 'retry'; retryAt: number; error: string }
  | { kind: 'gave-up'; error: string };

/**
 * Webhooks and the delivery outbox. Every delivery is a row, so an event recorded is delivered at least once
 * whatever happens to the queue: the relay hands the rows to the queue and hands them again when lost.
 */
export interface WebhookStore {
  /** Registers a webhook; the store keeps no secret in clear and gives it back with the webhook. */
  add(webhook: { clientId: number; url: string; now: number }): Promise<WebhookWithSecret>;
  /** The client's webhooks, removed ones included, by id. */
  list(clientId: number): Promise<Webhook[]>;
  find(webhookId: number): Promise<Webhook | null>;
  /**
   * Deactivates the webhook and drops its pending deliveries; null when there is no such webhook. Attempts
   * claimed before may still start until their claim ends: see claimedAttempts.
   */
  remove(webhookId: number, now: number): Promise<Webhook | null>;
  /** How many attempts to the webhook are claimed and may still start their request at `now`. */
  claimedAttempts(webhookId: number, now: number): Promise<number>;
  /** A new pending delivery to the webhook of every event of its client recorded at or after `since`. */
  replay(webhookId: number, since: number, now: number): Promise<number>;
  /** Pending deliveries whose next attempt is not in the queue yet, oldest first. */
  unenqueued(limit: number): Promise<DeliveryAttempt[]>;
  /** Pending deliveries handed to the queue and due before `before`: their job may have been lost. */
  overdue(before: number, limit: number): Promise<DeliveryAttempt[]>;
  /** Notes that these attempts are in the queue, for the deliveries still waiting for them. */
  markEnqueued(attempts: readonly DeliveryAttempt[], now: number): Promise<void>;
  target(deliveryId: number): Promise<DeliveryTarget | null>;
  /**
   * Claims attempt `attempt` of a delivery, its request to start before `until`, checking its webhook in the same
   * transaction: a delivery of a removed or inactive webhook is dropped instead, and a remove that commits first
   * is seen (a claim never succeeds after the remove of its webhook has committed).
   */
  claim(deliveryId: number, attempt: number, now: number, until: number): Promise<ClaimOutcome>;
  /**
   * Records attempt `attempt` of a pending delivery, and ends its claim whatever the delivery became; false when
   * the delivery is no longer at that attempt.
   */
  recordAttempt(deliveryId: number, attempt: number, outcome: AttemptOutcome, now: number): Promise<boolean>;
}

// ---- the whole store ------------------------------------------------------------------------------------

export interface StoreCounts {
  itemsByStatus: { status: number; count: number }[];
  unsettledByPhase: { phase: 'queued' | 'reserved'; count: number }[];
}

export interface Store {
  /** Which adapter: for logs, /readyz and benchmarks. */
  readonly kind: 'sqlite' | 'postgres';
  readonly clients: ClientStore;
  readonly catalog: CatalogStore;
  readonly orders: OrderStore;
  readonly processing: ProcessingStore;
  readonly items: ItemStore;
  readonly payments: PaymentStore;
  readonly ledger: LedgerStore;
  readonly reconcile: ReconcileStore;
  readonly search: SearchStore;
  readonly webhooks: WebhookStore;
  /** Figures for /metrics, read at scrape time. */
  counts(): Promise<StoreCounts>;
  /** Applies the migrations not applied yet; safe when several processes start at once. Returns their versions. */
  migrate(): Promise<number[]>;
  /** Resolves when the database answers. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
