import type { z } from 'zod';
import type { CheckedOrder, OrderIntake } from '../services/order-intake.js';
import { ApiError, describeIssue } from './errors.js';
import { isListingsProblem, orderRequestSchema } from './order-request.schema.js';
import { SvcStatus, type SvcStatusCode } from './status-codes.js';
import { readableError } from './zod-messages.js';

/**
 * The edge's check of a POST /v1/orders body: the card-testing lock first, then the shape (zod), the listings
 * and the card all at once, one message per problem; a request that passes is priced by the service.
 */
export function createOrderRequestCheck(intake: OrderIntake) {
  const schema = orderRequestSchema([...intake.domains.keys()]);
  return async function checkOrderRequest(
    clientId: number,
    body: Record<string, unknown>,
  ): Promise<CheckedOrder> {
    const lockedMs = await intake.lockedForMs(clientId);
    if (lockedMs > 0) {
      throw new ApiError(
        SvcStatus.CARD_TESTING_LOCKED,
        'ccToken: ordering is locked after too many invalid card tokens',
        { 'Retry-After': String(Math.ceil(lockedMs / 1000)) },
      );
    }
    const parsed = schema.safeParse(body, { error: readableError });
    const problems: [SvcStatusCode, string][] = parsed.success ? [] : parsed.error.issues.map(classify);
    const ccToken = typeof body.ccToken === 'string' ? body.ccToken : undefined;
    const findings = await intake.inspect(clientId, listingRefsOf(body), ccToken);
    for (const { index, listingId } of findings.unknownListings)
      problems.push([SvcStatus.INVALID, `listings[${index}].listingId: listing ${listingId} does not exist`]);
    if (ccToken !== undefined && !findings.card)
      problems.push([SvcStatus.BAD_CARD, 'ccToken: not an active card of this client']);
    if (problems.length > 0 || !parsed.success || !findings.card) throw toError(problems);
    const draft = parsed.data;
    return { draft, card: findings.card, ...intake.price(draft, findings.catalog) };
  };
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
function listingRefsOf(body: Record<string, unknown>): { index: number; listingId: number }[] {
  if (!Array.isArray(body.listings)) return [];
  return body.listings.flatMap((l: unknown, index) => {
    const id = (l as { listingId?: unknown } | null)?.listingId;
    return Number.isSafeInteger(id) && (id as number) > 0 ? [{ index, listingId: id as number }] : [];
  });
}
