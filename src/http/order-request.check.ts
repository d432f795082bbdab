import type { z } from 'zod';
import type {
  CheckedOrder,
  OrderDraft,
  OrderIntake,
  OrderProblem,
  OrderRequestRead,
} from '../services/order-intake.js';
import type { OrderRefusal } from '../services/submit-order.js';
import { isStorableText } from '../domain/storable-text.js';
import type { PricingCatalog } from '../store/port/store.port.js';
import { ApiError, describeIssue } from './errors.js';
import type { JsonLimits } from './json-body.js';
import { MAX_ITEMS, MAX_LISTINGS, isListingsProblem, orderRequestSchema } from './order-request.schema.js';
import { parseInput } from './request-input.js';
import { SvcStatus, type SvcStatusCode } from './status-codes.js';

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

/** An order request as the edge read it: what the service checks, and the problems of its fields. */
export interface OrderRequestReading {
  request: OrderRequestRead;
  /** The shape's problems (zod), one message each; the service's findings are reported after them. */
  problems: [SvcStatusCode, string][];
}

/**
 * The edge's part of a POST /v1/orders check: the shape (zod), one message per problem. Too many listings or
 * items make a request hopeless: it is read with the problems of its other fields only, for nothing to be looked
 * up. The order check (services/order-intake.ts: card-testing lock, listings, card, pricing) follows in the
 * service, whose findings become codes and messages in `refusalError`.
 */
export function createOrderRequestReader(domains: Iterable<string>) {
  const schema = orderRequestSchema([...domains]);
  const withoutListings = schema.omit({ listings: true });
  const maxTokenLength = schema.shape.ccToken.maxLength ?? Infinity;
  return function readOrderRequest(body: Record<string, unknown>): OrderRequestReading {
    const hopeless = hopelessListings(body.listings);
    let problems: [SvcStatusCode, string][];
    let draft: OrderDraft | null = null;
    if (hopeless) {
      const { listings: _listings, ...rest } = body;
      const others = parseInput(withoutListings, rest);
      problems = [[SvcStatus.LISTINGS_PROBLEM, hopeless], ...(others.error?.issues.map(classify) ?? [])];
    } else {
      const parsed = parseInput(schema, body);
      problems = parsed.success ? [] : parsed.error.issues.map(classify);
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
    return { request: { draft, listings, ccToken, hopeless: Boolean(hopeless) }, problems };
  };
}

/** A refused order as its error: 4293 when ordering is locked, else the shape's problems and the check's. */
export function refusalError(problems: readonly [SvcStatusCode, string][], refusal: OrderRefusal): ApiError {
  if (refusal.kind === 'locked')
    return new ApiError(
      SvcStatus.CARD_TESTING_LOCKED,
      'ccToken: ordering is locked after too many invalid card tokens',
      { 'Retry-After': String(Math.ceil(refusal.retryAfterMs / 1000)) },
    );
  return toError([...problems, ...refusal.problems.map(messageOf)]);
}

/**
 * The whole check of one order request, the edge's reading and the service's check, throwing its refusal: for
 * tools that check orders without placing them. A batch passes the catalog it read for all its entries at once.
 */
export function createOrderRequestCheck(intake: Pick<OrderIntake, 'domains' | 'check'>) {
  const readOrderRequest = createOrderRequestReader(intake.domains.keys());
  return async function checkOrderRequest(
    clientId: number,
    body: Record<string, unknown>,
    catalog?: PricingCatalog,
  ): Promise<CheckedOrder> {
    const { request, problems } = readOrderRequest(body);
    const check = await intake.check(clientId, request, catalog);
    if (check.kind === 'checked') return check.order;
    throw refusalError(problems, check);
  };
}

function messageOf(problem: OrderProblem): [SvcStatusCode, string] {
  return problem.kind === 'unknown-listing'
    ? [SvcStatus.INVALID, `listings[${problem.index}].listingId: listing ${problem.listingId} does not exist`]
    : [SvcStatus.BAD_CARD, 'ccToken: not an active card of this client'];
}

/** Why the listings alone make an order impossible (docs/api.md#limits), looking at their count first. */
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
