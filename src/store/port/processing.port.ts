/** Part of the store port (../store.port.ts): the worker's atomic steps. */
import type { PricingCatalog } from '../../domain/catalog.js';
import type { ItemStatusCode, LedgerKind } from '../../domain/item-status.js';
import type { OrderWithItems } from './orders.port.js';
import type { OrderEventWrite } from './webhooks.port.js';

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

/** What pricing turns an order read by an attempt into: the reservation to apply. */
export type PriceAttempt = (start: AttemptStart & { catalog: PricingCatalog }) => Reservation;

/** One attempt of a group (beginAttemptMany): beginAttempt's arguments. */
export interface AttemptRequest {
  orderId: number;
  lease: { leaseUntil: number; maxAttempts: number };
  price?: PriceAttempt;
}

/**
 * The worker's atomic steps. `beginAttempt`, `beginAttemptMany` and `reserve` resolve once committed (every
 * process reads what they wrote), which is not yet once it is on the disk: what acts on it outside the store (a
 * processor outside the store paid for the reservation, the order's end announced) waits for `OrderStore.durable()`
 * first. `settle` and `settleMany` resolve once durable, with every commit of the process before them.
 */
export interface ProcessingStore {
  /**
   * Counts an attempt at an unsettled order and returns it with its items as they stand after the count; an
   * attempt within `maxAttempts` takes the lease until `leaseUntil`. A settled order is returned as it is,
   * uncounted. Null when there is no such order. When the counted attempt is to reserve the order (still
   * queued, within its attempts), the pricing catalog of its listings is read in the same transaction and, with
   * `price`, the reservation it returns is applied there too, as `reserve` would (all of it or none). Durable
   * once `OrderStore.durable()` has resolved after it.
   */
  beginAttempt(
    orderId: number,
    lease: { leaseUntil: number; maxAttempts: number },
    price?: PriceAttempt,
  ): Promise<AttemptBegun | null>;
  /**
   * Begins each attempt as `beginAttempt` would, in one transaction: what each returned, in their order. The
   * orders are counted in id order, then the listings the reservations take are locked in id order across the
   * group, as every writer locks them; a reservation short of stock is not written and the others are. An
   * order may appear once only. When one attempt fails, none is applied.
   */
  beginAttemptMany(requests: readonly AttemptRequest[]): Promise<(AttemptBegun | null)[]>;
  /**
   * Applies a priced attempt while the order is still queued, taking every stock change or none. Durable once
   * `OrderStore.durable()` has resolved after it.
   */
  reserve(reservation: Reservation): Promise<ReserveResult>;
  /** Settles the order while it is still in `fromPhase` (and its lease allows); false when it no longer is. */
  settle(settlement: Settlement): Promise<boolean>;
  /**
   * Settles each in turn, as `settle` would, in one transaction: what each returned, in their order. When one
   * fails, none is applied.
   */
  settleMany(settlements: readonly Settlement[]): Promise<boolean[]>;
  /** Whether the ledger holds the entry: an authorisation the ledger knows is accounted for. */
  ledgerHas(entryKey: string): Promise<boolean>;
}

/** Refuses a group of attempts that names an order twice (beginAttemptMany). */
export function onceEach(requests: readonly AttemptRequest[]): void {
  const ids = new Set(requests.map((r) => r.orderId));
  if (ids.size !== requests.length) throw new Error('a group of attempts names an order twice');
}
