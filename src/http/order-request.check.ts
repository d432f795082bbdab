import type { z } from 'zod';
import type { CheckedOrder, OrderIntake } from '../services/order-intake.js';
import type { PricingCatalog } from '../store/store.port.js';
import { ApiError, describeIssue } from './errors.js';
import type { JsonLimits } from './json-body.js';
import { MAX_ITEMS, MAX_LISTINGS, isListingsProblem, orderRequestSchema } from './order-request.schema.js';
import { SvcStatus, type SvcStatusCode } from './status-codes.js';
import { readableError } from './zod-messages.js';

const TOO_MANY_LISTINGS = `listings: must have at most ${MAX_LISTINGS} listings`;

/**
 * An OrderRequest is 3 levels deep and holds at most a few hundred values: a body far beyond that is refused
 * before it is parsed, with 4002 when it is the listings that overflow.
 */
export const ORDER_JSON_LIMITS: JsonLimits = {
  maxDepth: 16,
  maxValues: 10_000,
  refuse: ({ limit, member, entries }) =>
    limit === 'values' && member === 'listings' && entries > MAX_LISTINGS
      ? new ApiError(SvcStatus.LISTINGS_PROBLEM, TOO_MANY_LISTINGS)
      : undefined,
};

/**
 * The edge's check of a POST /v1/orders body: the card-testing lock first, then the shape (zod), the listings
 * and the card all at once, one message per problem; a request that passes is priced by the service. Too many
 * listings or items make a request hopeless: it is answered with the problems of its other fields only, before
 * any listing is validated or looked up. A batch passes the catalog it read for all its entries at once.
 */
export function createOrderRequestCheck(intake: OrderIntake) {
  const schema = orderRequestSchema([...intake.domains.keys()]);
  const withoutListings = schema.omit({ listings: true });
  const maxTokenLength = schema.shape.ccToken.maxLength ?? Infinity;
  return async function checkOrderRequest(
    clientId: number,
    body: Record<string, unknown>,
    catalog?: PricingCatalog,
  ): Promise<CheckedOrder> {
    const lockedMs = await intake.lockedForMs(clientId);
    if (lockedMs > 0) {
      throw new ApiError(
        SvcStatus.CARD_TESTING_LOCKED,
        'ccToken: ordering is locked after too many invalid card tokens',
        { 'Retry-After': String(Math.ceil(lockedMs / 1000)) },
      );
    }
    const hopeless = hopelessListings(body.listings);
    if (hopeless) {
      const { listings: _listings, ...rest } = body;
      const others = withoutListings.safeParse(rest, { error: readableError });
      throw toError([[SvcStatus.LISTINGS_PROBLEM, hopeless], ...(others.error?.issues.map(classify) ?? [])]);
    }
    const parsed = schema.safeParse(body, { error: readableError });
    const problems: [SvcStatusCode, string][] = parsed.success ? [] : parsed.error.issues.map(classify);
    // A token longer than any card's is refused by its shape, without a lookup.
    const ccToken =
      typeof body.ccToken === 'string' && body.ccToken.length <= maxTokenLength ? body.ccToken : undefined;
    const findings = await intake.inspect(clientId, listingRefsOf(body), ccToken, catalog);
    for (const { index, listingId } of findings.unknownListings)
      problems.push([SvcStatus.INVALID, `listings[${index}].listingId: listing ${listingId} does not exist`]);
    if (ccToken !== undefined && !findings.card)
      problems.push([SvcStatus.BAD_CARD, 'ccToken: not an active card of this client']);
    if (problems.length > 0 || !parsed.success || !findings.card) throw toError(problems);
    const draft = parsed.data;
    return { draft, card: findings.card, ...intake.price(draft, findings.catalog) };
  };
}

/** Why the listings alone make an order impossible (CONTRACT.md section 11), looking at their count first. */
function hopelessListings(listings: unknown): string | undefined {
  if (!Array.isArray(listings)) return undefined;
  if (listings.length > MAX_LISTINGS) return TOO_MANY_LISTINGS;
  let items = 0;
  for (const listing of listings) {
    const quantity = (listing as { quantity?: unknown } | null)?.quantity;
    if (typeof quantity === 'number') items += quantity;
  }
  return items > MAX_ITEMS ? `listings: must have at most ${MAX_ITEMS} items in all` : undefined;
}

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
export function listingRefsOf(body: Record<string, unknown>): { index: number; listingId: number }[] {
  if (!Array.isArray(body.listings)) return [];
  return body.listings.flatMap((l: unknown, index) => {
    const id = (l as { listingId?: unknown } | null)?.listingId;
    return Number.isSafeInteger(id) && (id as number) > 0 ? [{ index, listingId: id as number }] : [];
  });
}
