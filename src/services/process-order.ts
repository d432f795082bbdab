import { ItemStatus } from '../domain/item-status.js';
import type { UsdPer } from '../domain/money.js';
import { priceOrder, type PricingResult } from '../domain/pricing.js';
import type { TaxRules } from '../domain/tax.js';
import type { Config } from '../config/config.js';
import type { Logger } from '../logger.js';
import { paymentKey, type PaymentGateway } from '../payments/payment-gateway.js';
import { newOrderEvent } from './order-events.js';
import { syncPayment } from './payment-sync.js';
import type {
  OrderWithItems,
  PricingCatalog,
  Reservation,
  Settlement,
  StockChange,
  StoredItem,
  Store,
} from '../store/port/store.port.js';

export interface ProcessOrderDeps {
  store: Pick<Store, 'processing' | 'catalog' | 'orders' | 'ledger'>;
  payments: PaymentGateway;
  usdPer: UsdPer;
  taxRules: TaxRules;
  clock: () => number;
  maxAttempts: number;
  /** ATTEMPT_LEASE_S: how long an attempt may take; until then nothing else gives up on its order. */
  config: Pick<Config, 'ATTEMPT_LEASE_S'>;
  logger: Logger;
}

/** failed: given up on now; held: given up on once the attempt that holds its lease has ended or expired. */
export type ProcessOutcome = 'missing' | 'settled' | 'already-settled' | 'failed' | 'held';

export interface ProcessResult {
  outcome: ProcessOutcome;
  /**
   * The order as this attempt's settlement committed it ('settled' only), every field an answer shows as the
   * store now holds it: what the metrics count, and what a waiting web answers with without reading it again.
   */
  settled: OrderWithItems | null;
}

// Stock taken by another order between pricing and reserving is rare; a few fresh prices settle it.
const RESERVE_ROUNDS = 5;

/** Prices a stored order with the same module as dry runs, from what the order recorded at acceptance. */
export function priceStoredOrder(
  { order, items }: OrderWithItems,
  catalog: PricingCatalog,
  usdPer: UsdPer,
  taxRules: TaxRules,
): PricingResult {
  const lines = new Map<number, { listingId: number; quantity: number; maxPriceCents: number | null }>();
  for (const item of items) {
    if (!lines.has(item.lineNo))
      lines.set(item.lineNo, {
        listingId: item.listingId,
        quantity: item.lineQuantity,
        maxPriceCents: item.maxPriceCents,
      });
  }
  return priceOrder({
    currency: order.currency,
    shippingMode: order.shippingMode,
    shipTo: { country: order.shipAddr.country, provstate: order.shipAddr.provstate ?? null },
    totalMaxPriceCents: order.totalMaxPriceCents,
    lines: [...lines.entries()].sort(([a], [b]) => a - b).map(([, line]) => line),
    listings: catalog.listings,
    vendors: catalog.vendors,
    usdPer,
    taxRules,
  });
}

/**
 * What a priced attempt writes: the items in request order take the priced figures of their lines. An item it
 * rejects is a change a client sees, so the reservation then records an event.
 */
export function reservationOf(stored: OrderWithItems, pricing: PricingResult, now: number): Reservation {
  const queue = [...stored.items];
  const items: Reservation['items'] = [];
  const take: StockChange[] = [];
  for (const line of pricing.lines) {
    for (const priced of line.items) {
      const item = queue.shift()!;
      items.push({
        orderItemId: item.orderItemId,
        ...priced,
        minDays: line.minDays,
        maxDays: line.maxDays,
        status: line.status === ItemStatus.ORDERED ? ItemStatus.QUEUED : line.status,
      });
    }
    if (line.status === ItemStatus.ORDERED) take.push({ listingId: line.listingId, copies: line.quantity });
  }
  return {
    orderId: stored.order.orderId,
    items,
    take: take.sort((a, b) => a.listingId - b.listingId),
    phase: pricing.purchasableItemCount > 0 ? 'reserved' : 'settled',
    taxCents: pricing.taxCents,
    taxModel: pricing.taxModel,
    totalCents: pricing.totalCents,
    now,
    ...(items.some((i) => i.status !== ItemStatus.QUEUED) ? { event: newOrderEvent() } : {}),
  };
}

/** The stock held by an order's QUEUED items, per listing: what giving up on a reserved order returns. */
export function stockHeldBy(items: readonly Pick<StoredItem, 'listingId' | 'status'>[]): StockChange[] {
  const copies = new Map<number, number>();
  for (const item of items) {
    if (item.status === ItemStatus.QUEUED) copies.set(item.listingId, (copies.get(item.listingId) ?? 0) + 1);
  }
  return [...copies].sort(([a], [b]) => a - b).map(([listingId, n]) => ({ listingId, copies: n }));
}

/** What an attempt does next, once it has counted itself and, for a new order, reserved what it buys. */
export type AttemptStep =
  | { kind: 'missing' }
  | { kind: 'settled'; byThisAttempt: false }
  | { kind: 'settled'; byThisAttempt: true; settled: OrderWithItems }
  | { kind: 'exhausted' }
  | { kind: 'pay'; stored: OrderWithItems };

/**
 * One attempt at an order; safe to run any number of times: every write is guarded by the order's phase in
 * the store, and the payment is keyed by the order so a retry finds the first authorisation, not a second.
 * With the order as the attempt settled it: the worker counts its items and announces it without reading it back.
 */
export async function attemptOrder(deps: ProcessOrderDeps, orderId: number): Promise<ProcessResult> {
  const step = await startAttempt(deps, orderId);
  switch (step.kind) {
    case 'missing':
      return { outcome: 'missing', settled: null };
    case 'settled':
      return step.byThisAttempt
        ? { outcome: 'settled', settled: step.settled }
        : { outcome: 'already-settled', settled: null };
    case 'exhausted': {
      // An earlier attempt may still be paying: it settles the order, or its lease runs out first.
      const failed = await failOrder(deps, orderId, { leaseFreeAt: deps.clock() });
      return { outcome: failed === 'held' ? 'held' : 'failed', settled: null };
    }
    case 'pay': {
      const settled = await pay(deps, step.stored);
      return settled ? { outcome: 'settled', settled } : { outcome: 'already-settled', settled: null };
    }
  }
}

/** Counts an attempt and, for an order still queued, prices it against current stock and reserves what it buys. */
export async function startAttempt(deps: ProcessOrderDeps, orderId: number): Promise<AttemptStep> {
  const leaseUntil = deps.clock() + deps.config.ATTEMPT_LEASE_S * 1000;
  // The attempt prices what it read and reserves in its own transaction; only stock taken in the meantime by
  // another order (rare) costs further rounds.
  const priced: { reservation?: Reservation } = {};
  const start = await deps.store.processing.beginAttempt(
    orderId,
    { leaseUntil, maxAttempts: deps.maxAttempts },
    (read) => {
      const pricing = priceStoredOrder(read, read.catalog, deps.usdPer, deps.taxRules);
      priced.reservation = reservationOf(read, pricing, deps.clock());
      return priced.reservation;
    },
  );
  if (!start) return { kind: 'missing' };
  if (start.order.phase === 'settled') return { kind: 'settled', byThisAttempt: false };
  if (start.order.attempts > deps.maxAttempts) return { kind: 'exhausted' };
  if (start.reserved === null) return { kind: 'pay', stored: start };
  const reserved =
    start.reserved === 'applied' ? reservedOrder(start, priced.reservation!) : await reserve(deps, start);
  if (reserved !== 'not-queued' && reserved.order.phase === 'settled') {
    // Settled by its reservation (nothing to buy): announced next, so durable first.
    await deps.store.orders.durable();
    return { kind: 'settled', byThisAttempt: true, settled: reserved };
  }
  // Another attempt got there first: carry on from what it stored.
  const stored = reserved === 'not-queued' ? await deps.store.orders.get(orderId) : reserved;
  if (!stored || stored.order.phase === 'settled') return { kind: 'settled', byThisAttempt: false };
  return { kind: 'pay', stored };
}

/**
 * The order as a reservation applied to it (`stored`, read queued) left it, as the store's `reserve` writes it:
 * every item takes its priced figures, and a queued one that the reservation rejects its status and the time; the
 * order its phase (settled when nothing is bought) and totals.
 */
function reservedOrder(stored: OrderWithItems, reservation: Reservation): OrderWithItems {
  const byId = new Map(reservation.items.map((i) => [i.orderItemId, i]));
  const { now } = reservation;
  return {
    order: {
      ...stored.order,
      phase: reservation.phase,
      taxCents: reservation.taxCents,
      taxModel: reservation.taxModel,
      totalCents: reservation.totalCents,
    },
    items: stored.items.map((item) => {
      const priced = byId.get(item.orderItemId);
      if (!priced) return item;
      const { costCents, shipcostCents, taxCents, minDays, maxDays } = priced;
      const moved = item.status === ItemStatus.QUEUED && priced.status !== ItemStatus.QUEUED;
      return {
        ...item,
        costCents,
        shipcostCents,
        taxCents,
        minDays,
        maxDays,
        ...(moved ? { status: priced.status, updatedAt: now, statusChangedAt: now } : {}),
      };
    }),
  };
}

/**
 * The order as a settlement applied to it (`stored`, read in the settlement's phase) left it, as the store's
 * `settle` writes it: its queued items take the status and the time, and lose their charges when it clears them;
 * the order is settled, its tax 0 (where it had one) when the settlement zeroes it. Only the worker moves a queued
 * item on, so the queued items of `stored` are the ones the settlement found.
 */
function settledOrder(stored: OrderWithItems, settlement: Settlement): OrderWithItems {
  const { order } = stored;
  const { now, clearCharges } = settlement;
  return {
    order: {
      ...order,
      phase: 'settled',
      taxCents: settlement.zeroTax && order.taxCents !== null ? 0 : order.taxCents,
    },
    items: stored.items.map((item) =>
      item.status !== ItemStatus.QUEUED
        ? item
        : {
            ...item,
            status: settlement.itemStatus,
            updatedAt: now,
            statusChangedAt: now,
            ...(clearCharges ? { shipcostCents: 0, taxCents: 0 } : {}),
          },
    ),
  };
}

/** Prices the order against a fresh catalog and reserves, for a few rounds while other orders take the stock. */
async function reserve(
  deps: ProcessOrderDeps,
  stored: OrderWithItems,
): Promise<OrderWithItems | 'not-queued'> {
  const listingIds = [...new Set(stored.items.map((i) => i.listingId))];
  for (let round = 1; round < RESERVE_ROUNDS; round += 1) {
    const catalog = await deps.store.catalog.loadForPricing(listingIds);
    const pricing = priceStoredOrder(stored, catalog, deps.usdPer, deps.taxRules);
    const reservation = reservationOf(stored, pricing, deps.clock());
    const result = await deps.store.processing.reserve(reservation);
    if (result === 'short') continue;
    if (result === 'not-queued') return result;
    return reservedOrder(stored, reservation);
  }
  throw new Error(
    `order ${stored.order.orderId}: stock kept changing while it was reserved; retrying the job`,
  );
}

/**
 * Authorises the reserved amount once (keyed by the order) and settles the order with the answer; the order as
 * it settled it, or null when another attempt settled the order first.
 */
async function pay(deps: ProcessOrderDeps, stored: OrderWithItems): Promise<OrderWithItems | null> {
  const { order, items } = stored;
  const key = paymentKey(order.orderId);
  const amountCents = order.totalCents!;
  // A processor outside the store is paid for a reservation that survives a crash; the sandbox's authorisation is
  // a commit after the reservation in the store's own log, lost only with it, and the settlement's commit makes
  // all of them durable at once (ProcessingStore).
  if (!deps.payments.inStore) await deps.store.orders.durable();
  const result = await deps.payments.authorize({
    key,
    cardId: order.cardId,
    amountCents,
    currency: order.currency,
  });
  const ledger = {
    entryKey: `${result.approved ? 'authorize' : 'decline'}:${key}`,
    orderId: order.orderId,
    orderItemId: null,
    kind: result.approved ? ('authorize' as const) : ('decline' as const),
    amountCents,
    currency: order.currency,
  };
  const settlement: Settlement = {
    orderId: order.orderId,
    fromPhase: 'reserved',
    itemStatus: result.approved ? ItemStatus.ORDERED : ItemStatus.CREDIT_CARD_REJECTED,
    clearCharges: !result.approved,
    zeroTax: !result.approved,
    giveBack: result.approved ? [] : stockHeldBy(items),
    ledger,
    now: deps.clock(),
    event: newOrderEvent(),
  };
  if (!(await deps.store.processing.settle(settlement))) {
    if (result.approved) await voidIfUnaccounted(deps, order.orderId);
    return null;
  }
  deps.logger.info({ orderId: order.orderId, approved: result.approved, amountCents }, 'order settled');
  return settledOrder(stored, settlement);
}

/**
 * An authorisation that landed after the order was settled without it (given up on while this attempt was
 * paying) is released: giving up moved the order's payment version on with a target of 0, and the gateway is
 * brought to it (a no-op when that already happened). One the ledger holds belongs to a twin that settled first.
 */
async function voidIfUnaccounted(deps: ProcessOrderDeps, orderId: number): Promise<void> {
  if (await deps.store.processing.ledgerHas(`authorize:${paymentKey(orderId)}`)) return;
  if ((await syncPayment(deps, orderId)) === 'applied')
    deps.logger.warn({ orderId }, 'authorisation landed after the order was given up on: released');
}

/**
 * Gives up on an order after its last attempt: the items FAILED (guarded, so no attempt can settle it as bought
 * afterwards) and the order's payment version moved on in the same transaction, then the gateway brought to 0.
 * With `leaseFreeAt`, an order whose lease an attempt still holds is left to that attempt ('held'). The release
 * is a versioned target: before any authorisation it makes the gateway decline one that comes later, and a
 * crash before it leaves the order pending for reconciliation, however long that takes.
 */
export async function failOrder(
  deps: Pick<ProcessOrderDeps, 'payments' | 'clock' | 'logger'> & {
    store: Pick<Store, 'orders' | 'processing' | 'ledger'>;
  },
  orderId: number,
  { leaseFreeAt }: { leaseFreeAt?: number } = {},
): Promise<'failed' | 'held' | 'settled'> {
  for (let round = 0; round < RESERVE_ROUNDS; round += 1) {
    const stored = await deps.store.orders.get(orderId);
    if (!stored || stored.order.phase === 'settled') return 'settled';
    const { leaseUntil } = stored.order;
    if (leaseFreeAt !== undefined && leaseUntil !== null && leaseUntil > leaseFreeAt) return 'held';
    const failed = await deps.store.processing.settle({
      orderId,
      fromPhase: stored.order.phase,
      itemStatus: ItemStatus.FAILED,
      clearCharges: true,
      zeroTax: true,
      giveBack: stored.order.phase === 'reserved' ? stockHeldBy(stored.items) : [],
      ledger: null,
      now: deps.clock(),
      ...(leaseFreeAt !== undefined ? { leaseFreeAt } : {}),
      event: newOrderEvent(),
      releasePayment: true,
    });
    if (failed) {
      deps.logger.warn({ orderId }, 'order failed after its last attempt');
      try {
        await syncPayment(deps, orderId);
      } catch (err) {
        deps.logger.warn({ err, orderId }, 'payment release left for reconciliation');
      }
      return 'failed';
    }
  }
  throw new Error(`order ${orderId}: its phase kept changing while it was failed`);
}
