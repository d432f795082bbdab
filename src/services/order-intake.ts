import type { z } from 'zod';
import { marketplaceDomains } from '../domain/marketplace.js';
import type { Currency } from '../domain/money.js';
import { toCents } from '../domain/money.js';
import { priceOrder, type PricingResult } from '../domain/pricing.js';
import type { Deps } from '../deps.js';
import { ApiError, describeIssue } from '../http/errors.js';
import type { Lockout } from '../http/lockout.js';
import { isListingsProblem, orderRequestSchema, type OrderRequest } from '../http/order-request.schema.js';
import { readableError } from '../http/zod-messages.js';
import { SvcStatus, type SvcStatusCode } from '../http/status-codes.js';
import type { AuthContext } from '../http/respond.js';
import type { Card } from '../store/client.repository.js';
import type { PricingCatalog } from '../store/catalog.repository.js';
import { cachedFor } from '../store/read-cache.js';

export type IntakeDeps = Pick<Deps, 'config' | 'clients' | 'catalog' | 'usdPer' | 'taxRules' | 'clock'> & {
  cardLockout: Lockout;
};

/** A request that passed every check, priced against the catalog as it stands now. */
export interface CheckedOrder {
  request: OrderRequest;
  currency: Currency;
  card: Card;
  catalog: PricingCatalog;
  pricing: PricingResult;
}

export function createOrderIntake(deps: IntakeDeps) {
  const domains = marketplaceDomains(deps.config.marketplaceNames);
  const schema = orderRequestSchema([...domains.keys()]);
  // Cards change rarely; a second of memory spares a query per order.
  const findCard = cachedFor(1000, (token: string) => deps.clients.findCard(token));

  /** Validates shape, listings and card all at once (one message per problem), then prices the order. */
  async function check(auth: AuthContext, body: Record<string, unknown>): Promise<CheckedOrder> {
    const lockedMs = await deps.cardLockout.lockedForMs(String(auth.clientId), deps.clock());
    if (lockedMs > 0) {
      throw new ApiError(
        SvcStatus.CARD_TESTING_LOCKED,
        'ccToken: ordering is locked after too many invalid card tokens',
        {
          'Retry-After': String(Math.ceil(lockedMs / 1000)),
        },
      );
    }
    const parsed = schema.safeParse(body, { error: readableError });
    const problems: [SvcStatusCode, string][] = parsed.success ? [] : parsed.error.issues.map(classify);
    const listingIds = listingIdsOf(body);
    const catalog = deps.catalog.loadForPricing(listingIds.map(([, id]) => id));
    for (const [i, id] of listingIds) {
      if (!catalog.listings.has(id))
        problems.push([SvcStatus.INVALID, `listings[${i}].listingId: listing ${id} does not exist`]);
    }
    const card = typeof body.ccToken === 'string' ? findCard(body.ccToken, deps.clock()) : null;
    const badCard =
      typeof body.ccToken === 'string' && (!card || card.clientId !== auth.clientId || !card.active);
    if (badCard) {
      await deps.cardLockout.recordFailure(String(auth.clientId), deps.clock());
      problems.push([SvcStatus.BAD_CARD, 'ccToken: not an active card of this client']);
    }
    if (problems.length > 0 || !parsed.success) throw toError(problems);
    const request = parsed.data;
    const currency = domains.get(request.domain)!;
    return { request, currency, card: card!, catalog, pricing: price(request, currency, catalog) };
  }

  function price(request: OrderRequest, currency: Currency, catalog: PricingCatalog): PricingResult {
    return priceOrder({
      currency,
      shippingMode: request.shippingMode,
      shipTo: { country: request.shipAddr.country, provstate: request.shipAddr.provstate ?? null },
      totalMaxPriceCents: request.totalMaxPrice === undefined ? null : toCents(request.totalMaxPrice),
      lines: request.listings.map((l) => ({
        listingId: l.listingId,
        quantity: l.quantity,
        maxPriceCents: l.maxPrice === undefined ? null : toCents(l.maxPrice),
      })),
      listings: catalog.listings,
      vendors: catalog.vendors,
      usdPer: deps.usdPer,
      taxRules: deps.taxRules,
    });
  }

  return { check, price };
}

export type OrderIntake = ReturnType<typeof createOrderIntake>;

function classify(issue: z.core.$ZodIssue): [SvcStatusCode, string] {
  return [isListingsProblem(issue) ? SvcStatus.LISTINGS_PROBLEM : SvcStatus.INVALID, describeIssue(issue)];
}

function toError(problems: [SvcStatusCode, string][]): ApiError {
  return new ApiError(
    problems.map(([code]) => code),
    problems.map(([, message]) => message),
  );
}

/** The well-formed listing ids of a raw body with their index, so unknown ones are reported beside shape problems. */
function listingIdsOf(body: Record<string, unknown>): [number, number][] {
  if (!Array.isArray(body.listings)) return [];
  return body.listings.flatMap((l: unknown, i): [number, number][] => {
    const id = (l as { listingId?: unknown } | null)?.listingId;
    return Number.isSafeInteger(id) && (id as number) > 0 ? [[i, id as number]] : [];
  });
}
