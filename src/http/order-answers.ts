import type { PlaceOrderResult } from '../services/place-order.js';
import { ApiError } from './errors.js';
import { SvcStatus } from './status-codes.js';

/** 2010 for an order met again while its job still waits or runs; 2001 for a new one or a settled duplicate. */
export function placedCode(result: Extract<PlaceOrderResult, { kind: 'placed' }>) {
  return result.duplicate && result.queued ? SvcStatus.DUPLICATE_PROCESSING : SvcStatus.CREATED;
}

/** 5030 with Retry-After: too many orders (or too many of this client's) wait for the workers; nothing stored. */
export function backpressureError({
  retryAfterS,
  ofClient,
}: {
  retryAfterS: number;
  ofClient: boolean;
}): ApiError {
  const what = ofClient
    ? "too many of this client's orders are waiting to be processed (its share of the backlog)"
    : 'too many orders are waiting to be processed';
  return new ApiError(SvcStatus.UNAVAILABLE, `${what}; nothing was stored, retry after Retry-After seconds`, {
    'Retry-After': String(retryAfterS),
  });
}
