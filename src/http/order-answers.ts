import type { OrderProblemKind, OrderRefusal } from '../services/orders/order-check.js';
import type { PlacedOrder } from '../services/orders/place-order.js';
import type { BatchEntryResult } from '../services/orders/place-order-batch.js';
import { ApiError } from './errors.js';
import type { OrderBatchResult } from './order-response.schema.js';
import { SvcStatus, type SvcStatusCode } from './status-codes.js';

/** The Svc-Status code of each kind of problem an order is refused for (docs/api.md#status-codes). */
const PROBLEM_CODES: Record<OrderProblemKind, SvcStatusCode> = {
  field: SvcStatus.INVALID,
  listings: SvcStatus.LISTINGS_PROBLEM,
  orders: SvcStatus.LISTINGS_PROBLEM,
  'not-an-order': SvcStatus.MALFORMED,
  card: SvcStatus.BAD_CARD,
  locked: SvcStatus.CARD_TESTING_LOCKED,
  conflict: SvcStatus.REQUEST_ID_CONFLICT,
  busy: SvcStatus.UNAVAILABLE,
};

/** A refused order as its error: a code and a message per problem, Retry-After when waiting can make it pass. */
export function refusalError({ problems, retryAfterS }: OrderRefusal): ApiError {
  return new ApiError(
    problems.map((p) => PROBLEM_CODES[p.kind]),
    problems.map((p) => p.message),
    retryAfterS === undefined ? {} : { 'Retry-After': String(retryAfterS) },
  );
}

/**
 * 2002 for a dry run; 2003 for an order met again while its job still waits or runs; 2010 for a new one or a
 * settled duplicate.
 */
export function placedCode(result: PlacedOrder): SvcStatusCode {
  if (result.kind === 'dry-run') return SvcStatus.DRY_RUN_OK;
  return result.duplicate && result.queued ? SvcStatus.DUPLICATE_PROCESSING : SvcStatus.CREATED;
}

/** A batch entry's result: its order, or its codes (ascending) and messages as the order would get them alone. */
export function batchResultOf({ requestId, result }: BatchEntryResult): OrderBatchResult {
  if (result.kind !== 'refused') return { requestId, status: [placedCode(result)], order: result.order };
  const { codes, messages } = refusalError(result);
  return { requestId, status: [...codes].sort((a, b) => a - b), order: null, messages };
}
