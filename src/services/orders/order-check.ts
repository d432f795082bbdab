import type { z } from 'zod';
import type { Config } from '../../config/config.js';
import { marketplaceDomains } from '../../domain/marketplace.js';
import { toCents, type Currency, type UsdPer } from '../../domain/money.js';
import { priceOrder, type PricingResult } from '../../domain/pricing.js';
import { describeIssue, parseInput } from '../../domain/readable-input.js';
import { isStorableText } from '../../domain/storable-text.js';
import type { TaxRules } from '../../domain/tax.js';
import type { Card, PricingCatalog, Store } from '../../store/port/store.port.js';
import { cachedFor, recentListings } from '../read-cache.js';
import { MAX_BATCH_ORDERS, isOrdersCountProblem } from './order-batch.schema.js';
import {
  MAX_ITEMS,
  MAX_LISTINGS,
  isListingsProblem,
  orderRequestSchema,
  type OrderRequest,
} from './order-request.schema.js';

/**
 * What an order (or a batch entry) can be refused for. The edge gives each kind its Svc-Status code
 * (http/order-answers.ts), several kinds sharing one; a new kind is a compile error there until it has its code.
 */
export type OrderProblemKind =
  /** A field is wrong: missing, of the wrong type, unknown, out of its range; a listing that does not exist. */
  | 'field'
  /** The listings as a whole: none, more than 100, a quantity below one, more than 250 items in all. */
  | 'listings'
  /** A batch's orders: none, or more than 500. */
  | 'orders'
  /** A batch entry that is not an object. */
  | 'not-an-order'
  /** The ccToken is not an active card of this client (it counts towards the lock). */
  | 'card'
  /** Ordering is locked for this client after too many bad cards: reported alone, with when to retry. */
  | 'locked'
  /** The idempotency key was used before for another request. */
  | 'conflict'
  /** Too many orders wait for the workers: nothing stored, retry later. */
  | 'busy';

/** One problem: its kind and one readable line naming what is wrong. */
export interface OrderProblem {
  kind: OrderProblemKind;
  message: string;
}

/** Every problem an order is refused for, with its message: the one place they are worded. */
export const ORDER_PROBLEMS = {
  /** A zod issue of the request's shape: 'listings' for the listings as a whole (isListingsProblem), else 'field'. */
  issue: (issue: z.core.$ZodIssue, prefix: (string | number)[] = []): OrderProblem => ({
    kind: isListingsProblem(issue) ? 'listings' : 'field',
    message: describeIssue(issue, prefix),
  }),
  tooManyListings: { kind: 'listings', message: `listings: must have at most ${MAX_LISTINGS} listings` },
  tooManyItems: { kind: 'listings', message: `listings: must have at most ${MAX_ITEMS} items in all` },
  unknownListing: (index: number, listingId: number): OrderProblem => ({
    kind: 'field',
    message: `listings[${index}].listingId: listing ${listingId} does not exist`,
  }),
  card: { kind: 'card', message: 'ccToken: not an active card of this client' },
  locked: { kind: 'locked', message: 'ccToken: ordering is locked after too many invalid card tokens' },
  /** The idempotency key by its name in the request: Svc-RequestId, or a batch entry's requestId. */
  conflict: (key: 'Svc-RequestId' | 'requestId'): OrderProblem => ({
    kind: 'conflict',
    message: `${key}: already used by this access key for a different request`,
  }),
  busy: (ofClient: boolean): OrderProblem => ({
    kind: 'busy',
    message: `${
      ofClient
        ? "too many of this client's orders are waiting to be processed (its share of the backlog)"
        : 'too many orders are waiting to be processed'
    }; nothing was stored, retry after Retry-After seconds`,
  }),
  /** A zod issue of a batch's root: 'orders' for the count of its orders, else 'field'. */
  batchIssue: (issue: z.core.$ZodIssue): OrderProblem => ({
    kind: isOrdersCountProblem(issue) ? 'orders' : 'field',
    message: describeIssue(issue),
  }),
  tooManyOrders: { kind: 'orders', message: `orders: must have at most ${MAX_BATCH_ORDERS} orders` },
  notAnOrder: {
    kind: 'not-an-order',
    message: 'order: must be a JSON object (an OrderRequest with its requestId)',
  },
  requestIdTwice: (first: number): OrderProblem => ({
    kind: 'field',
    message: `requestId: appears more than once in the batch (first at orders[${first}])`,
  }),
} satisfies Record<string, OrderProblem | ((...args: never[]) => OrderProblem)>;

/** A refused order: every problem found, never none; `retryAfterS` when waiting can make it pass. */
export interface OrderRefusal {
  kind: 'refused';
  problems: [OrderProblem, ...OrderProblem[]];
  retryAfterS?: number;
}

/** The refusal for these problems; none when there are none. */
export function refusalOf(problems: readonly OrderProblem[], retryAfterS?: number): OrderRefusal | undefined {
  const [first, ...rest] = problems;
  if (!first) return undefined;
  return {
    kind: 'refused',
    problems: [first, ...rest],
    ...(retryAfterS === undefined ? {} : { retryAfterS }),
  };
}

/** An order request whose every field passed its shape. */
export type OrderDraft = OrderRequest;

/** An order ready to be answered as a dry run or accepted: its fields and card checked, priced now. */
export interface CheckedOrder {
  draft: OrderDraft;
  currency: Currency;
  card: Card;
  pricing: PricingResult;
}

export type OrderCheckResult = { kind: 'checked'; order: CheckedOrder } | OrderRefusal;

/** The card-testing defence (docs/api.md#status-codes): failures counted per client, a lock after too many. */
export interface CardLockout {
  lockedForMs(subject: string, now: number): Promise<number>;
  recordFailure(subject: string, now: number): Promise<unknown>;
}

export interface OrderCheckDeps {
  config: Pick<Config, 'marketplaceNames'>;
  store: Pick<Store, 'catalog' | 'clients'>;
  usdPer: UsdPer;
  taxRules: TaxRules;
  clock: () => number;
  cardLockout: CardLockout;
}

export type OrderCheck = ReturnType<typeof createOrderCheck>;

/** The check of an order request: its shape, its listings and its card, every problem at once; then its price. */
export function createOrderCheck(deps: OrderCheckDeps) {
  const domains = marketplaceDomains(deps.config.marketplaceNames);
  const read = orderRequestReader(domains.keys());
  // Cards change rarely; a second of memory spares a query per order.
  const findCard = cachedFor(1000, (token: string) => deps.store.clients.findCard(token));
  const recentCatalog = recentListings(RECENT_CATALOG_MS, (ids) => deps.store.catalog.loadForPricing(ids));

  return {
    /** The listings (and their vendors) as they stand, for several requests at once. */
    loadCatalog(listingIds: readonly number[]): Promise<PricingCatalog> {
      return deps.store.catalog.loadForPricing(listingIds);
    },
    /**
     * The card-testing lock first (alone); then the body's shape, and unless its listings make it hopeless, its
     * listings and card as the store has them (an invalid card counts towards the lock), every problem at once;
     * then its price. `loaded` is a catalog read for several requests at once (a batch), holding this one's
     * listings.
     */
    async check(
      clientId: number,
      body: Record<string, unknown>,
      loaded?: PricingCatalog,
    ): Promise<OrderCheckResult> {
      const lockedMs = await deps.cardLockout.lockedForMs(String(clientId), deps.clock());
      if (lockedMs > 0) return refusalOf([ORDER_PROBLEMS.locked], Math.ceil(lockedMs / 1000))!;
      const request = read(body);
      if (request.hopeless) return refusalOf(request.problems)!;
      // A dry run shows what an order would get now: it reads the catalog. A real order is priced again by
      // its attempt against the catalog and stock as they then stand, so it takes listings read up to a
      // second ago (a listing not known then is read now).
      const ids = request.listings.map((l) => l.listingId);
      const real = request.draft !== null && request.draft.dryrun !== true;
      const recent = loaded ?? (real ? await recentCatalog(ids, deps.clock()) : undefined);
      const [catalog, found] = await Promise.all([
        recent ?? deps.store.catalog.loadForPricing(ids),
        request.ccToken === undefined ? null : findCard(request.ccToken, deps.clock()),
      ]);
      const card = found && found.clientId === clientId && found.active ? found : null;
      if (request.ccToken !== undefined && !card)
        await deps.cardLockout.recordFailure(String(clientId), deps.clock());
      const problems = [
        ...request.problems,
        ...request.listings
          .filter((l) => !catalog.listings.has(l.listingId))
          .map((l) => ORDER_PROBLEMS.unknownListing(l.index, l.listingId)),
        ...(request.ccToken !== undefined && !card ? [ORDER_PROBLEMS.card] : []),
      ];
      const refusal = refusalOf(problems);
      if (refusal) return refusal;
      // No problem: every field passed its shape (a draft), so the token was read, and it is this client's card.
      const draft = request.draft!;
      return { kind: 'checked', order: { draft, card: card!, ...price(draft, catalog) } };
    },
  };

  /** Prices a draft against the listings as they stand now. */
  function price(draft: OrderDraft, catalog: PricingCatalog): { currency: Currency; pricing: PricingResult } {
    const currency = domains.get(draft.domain)!;
    const pricing = priceOrder({
      currency,
      shippingMode: draft.shippingMode,
      shipTo: { country: draft.shipAddr.country, provstate: draft.shipAddr.provstate ?? null },
      totalMaxPriceCents: centsOrNull(draft.totalMaxPrice),
      lines: draft.listings.map((l) => ({
        listingId: l.listingId,
        quantity: l.quantity,
        maxPriceCents: centsOrNull(l.maxPrice),
      })),
      listings: catalog.listings,
      vendors: catalog.vendors,
      usdPer: deps.usdPer,
      taxRules: deps.taxRules,
    });
    return { currency, pricing };
  }
}

/** How long a real order may be priced against a listing (with its vendor) read before. */
const RECENT_CATALOG_MS = 1000;

/** An optional amount of a checked request, in cents. */
export const centsOrNull = (amount: number | undefined): number | null =>
  amount === undefined ? null : toCents(amount);

/** A body as its shape reads: its draft when every field passed, its problems, and what the store must look up. */
interface OrderRequestRead {
  /** Null when a field failed its shape; the lookups still run, so every problem is reported at once. */
  draft: OrderDraft | null;
  problems: OrderProblem[];
  /** The well-formed listing ids with their position in the request. */
  listings: readonly { index: number; listingId: number }[];
  /** The token when it can be a card's; undefined when absent or malformed (no lookup, no failure counted). */
  ccToken: string | undefined;
  /** Too many listings or items: answered with the problems of the shape alone, nothing looked up. */
  hopeless: boolean;
}

/**
 * The shape of an order request (zod), one problem per issue. Too many listings or items make a request
 * hopeless: it is read with the problems of its other fields only, for nothing to be looked up.
 */
function orderRequestReader(domains: Iterable<string>) {
  const schema = orderRequestSchema([...domains]);
  const withoutListings = schema.omit({ listings: true });
  const maxTokenLength = schema.shape.ccToken.maxLength ?? Infinity;
  return function readOrderRequest(body: Record<string, unknown>): OrderRequestRead {
    const hopeless = hopelessListings(body.listings);
    let problems: OrderProblem[];
    let draft: OrderDraft | null = null;
    if (hopeless) {
      const { listings: _listings, ...rest } = body;
      const others = parseInput(withoutListings, rest);
      problems = [hopeless, ...(others.error?.issues.map((i) => ORDER_PROBLEMS.issue(i)) ?? [])];
    } else {
      const parsed = parseInput(schema, body);
      problems = parsed.success ? [] : parsed.error.issues.map((i) => ORDER_PROBLEMS.issue(i));
      draft = parsed.success ? parsed.data : null;
    }
    // A token longer than any card's, or holding text no card's does, is refused by its shape, without a lookup.
    const ccToken =
      typeof body.ccToken === 'string' &&
      body.ccToken.length <= maxTokenLength &&
      isStorableText(body.ccToken)
        ? body.ccToken
        : undefined;
    const listings = hopeless ? [] : listingRefsOf(body);
    return { draft, problems, listings, ccToken, hopeless: Boolean(hopeless) };
  };
}

/** Why the listings alone make an order impossible (docs/api.md#limits), looking at their count first. */
function hopelessListings(listings: unknown): OrderProblem | undefined {
  if (!Array.isArray(listings)) return undefined;
  if (listings.length > MAX_LISTINGS) return ORDER_PROBLEMS.tooManyListings;
  let items = 0;
  for (const listing of listings) {
    const quantity = (listing as { quantity?: unknown } | null)?.quantity;
    if (typeof quantity === 'number') items += quantity;
  }
  return items > MAX_ITEMS ? ORDER_PROBLEMS.tooManyItems : undefined;
}

/** The well-formed listing ids of a raw body with their index, so unknown ones are reported beside shape problems. */
export function listingRefsOf(body: Record<string, unknown>): { index: number; listingId: number }[] {
  if (!Array.isArray(body.listings)) return [];
  return body.listings.flatMap((l: unknown, index) => {
    const id = (l as { listingId?: unknown } | null)?.listingId;
    return Number.isSafeInteger(id) && (id as number) > 0 ? [{ index, listingId: id as number }] : [];
  });
}
