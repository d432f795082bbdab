import { marketplaceDomains } from '../domain/marketplace.js';
import { toCents, type Currency, type UsdPer } from '../domain/money.js';
import { priceOrder, type PricingResult } from '../domain/pricing.js';
import type { TaxRules } from '../domain/tax.js';
import type { Config } from '../config.js';
import type { Card, OrderAddress, PricingCatalog, Store } from '../store/port/store.port.js';
import { cachedFor, recentListings } from './read-cache.js';

/** An order request that passed the edge's validation: what the service needs of it. */
export interface OrderDraft {
  shipAddr: OrderAddress;
  billAddr: OrderAddress;
  ccToken: string;
  listings: { listingId: number; quantity: number; maxPrice?: number }[];
  shippingMode: 'S' | 'P';
  domain: string;
  totalMaxPrice?: number;
  dryrun?: boolean;
  referenceId?: string;
}

/** The card-testing defence (docs/api.md#status-codes, 4293): failures counted per client, a lock after too many. */
export interface CardLockout {
  lockedForMs(subject: string, now: number): Promise<number>;
  recordFailure(subject: string, now: number): Promise<unknown>;
}

export interface IntakeDeps {
  config: Pick<Config, 'marketplaceNames'>;
  store: Pick<Store, 'catalog' | 'clients'>;
  usdPer: UsdPer;
  taxRules: TaxRules;
  clock: () => number;
  cardLockout: CardLockout;
}

/** What the store says of a request's references: its listings as they stand and its card. */
export interface IntakeFindings {
  catalog: PricingCatalog;
  /** Positions (in the request) of the listings that do not exist. */
  unknownListings: { index: number; listingId: number }[];
  /** The card when it is an active card of this client; null otherwise (and the failure is counted). */
  card: Card | null;
}

/** An order ready to be answered as a dry run or accepted: validated, its card checked, priced now. */
export interface CheckedOrder {
  draft: OrderDraft;
  currency: Currency;
  card: Card;
  pricing: PricingResult;
}

export type OrderIntake = ReturnType<typeof createOrderIntake>;

/** A request as the edge read it: its draft when every field passed, and what the store must look up. */
export interface OrderRequestRead {
  /** Null when a field failed its shape; the lookups still run, so every problem is reported at once. */
  draft: OrderDraft | null;
  /** The well-formed listing ids with their position in the request. */
  listings: readonly { index: number; listingId: number }[];
  /** The token when it can be a card's; undefined when absent or malformed (no lookup, no failure counted). */
  ccToken: string | undefined;
  /** Too many listings or items: answered with the edge's problems alone, nothing looked up. */
  hopeless: boolean;
}

/** What the store found wrong with a request, in the order they are reported. */
export type OrderProblem =
  { kind: 'unknown-listing'; index: number; listingId: number } | { kind: 'bad-card' };

export type OrderCheck =
  | { kind: 'locked'; retryAfterMs: number }
  | { kind: 'refused'; problems: OrderProblem[] }
  | { kind: 'checked'; order: CheckedOrder };

/** The checks of an order against the store and its pricing; the edge turns findings into messages. */
export function createOrderIntake(deps: IntakeDeps) {
  const domains = marketplaceDomains(deps.config.marketplaceNames);
  // Cards change rarely; a second of memory spares a query per order.
  const findCard = cachedFor(1000, (token: string) => deps.store.clients.findCard(token));
  const recentCatalog = recentListings(RECENT_CATALOG_MS, (ids) => deps.store.catalog.loadForPricing(ids));

  return {
    /** The seven domains and their currencies. */
    domains,
    /** How long ordering stays locked for this client after too many invalid card tokens; 0 when open. */
    lockedForMs(clientId: number): Promise<number> {
      return deps.cardLockout.lockedForMs(String(clientId), deps.clock());
    },
    /** The listings (and their vendors) as they stand, for several requests at once. */
    loadCatalog(listingIds: readonly number[]): Promise<PricingCatalog> {
      return deps.store.catalog.loadForPricing(listingIds);
    },
    /**
     * Looks up the listings and the card a request names; an invalid card counts towards the lock. `loaded`
     * is a catalog read for several requests at once (a batch), holding at least this request's listings.
     */
    async inspect(
      clientId: number,
      listings: readonly { index: number; listingId: number }[],
      ccToken: string | undefined,
      loaded?: PricingCatalog,
    ): Promise<IntakeFindings> {
      const [catalog, found] = await Promise.all([
        loaded ?? deps.store.catalog.loadForPricing(listings.map((l) => l.listingId)),
        ccToken === undefined ? null : findCard(ccToken, deps.clock()),
      ]);
      const card = found && found.clientId === clientId && found.active ? found : null;
      if (ccToken !== undefined && !card)
        await deps.cardLockout.recordFailure(String(clientId), deps.clock());
      const unknownListings = listings.filter((l) => !catalog.listings.has(l.listingId));
      return { catalog, unknownListings, card };
    },
    /**
     * The order check: the card-testing lock first, then the listings and the card, then pricing when nothing is
     * wrong. `refused` with no problems means the edge's own problems decide (a hopeless or malformed request).
     */
    async check(clientId: number, request: OrderRequestRead, loaded?: PricingCatalog): Promise<OrderCheck> {
      const lockedMs = await this.lockedForMs(clientId);
      if (lockedMs > 0) return { kind: 'locked', retryAfterMs: lockedMs };
      if (request.hopeless) return { kind: 'refused', problems: [] };
      // A dry run shows what an order would get now: it reads the catalog. A real order is priced again by
      // its attempt against the catalog and stock as they then stand, so it takes listings read up to a
      // second ago (a listing not known then is read now).
      const real = request.draft !== null && request.draft.dryrun !== true;
      const catalog =
        loaded ??
        (real
          ? await recentCatalog(
              request.listings.map((l) => l.listingId),
              deps.clock(),
            )
          : undefined);
      const findings = await this.inspect(clientId, request.listings, request.ccToken, catalog);
      const problems: OrderProblem[] = findings.unknownListings.map((l) => ({
        kind: 'unknown-listing',
        ...l,
      }));
      if (request.ccToken !== undefined && !findings.card) problems.push({ kind: 'bad-card' });
      if (problems.length > 0 || !request.draft || !findings.card) return { kind: 'refused', problems };
      const draft = request.draft;
      return {
        kind: 'checked',
        order: { draft, card: findings.card, ...this.price(draft, findings.catalog) },
      };
    },
    /** Prices a validated draft against the listings as they stand now. */
    price(draft: OrderDraft, catalog: PricingCatalog): { currency: Currency; pricing: PricingResult } {
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
    },
  };
}

/** How long a real order may be priced against a listing (with its vendor) read before. */
const RECENT_CATALOG_MS = 1000;

/** An optional amount of a validated request, in cents. */
export const centsOrNull = (amount: number | undefined): number | null =>
  amount === undefined ? null : toCents(amount);
