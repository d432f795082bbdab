import type { RequestHandler } from 'express';
import { ApiError } from './errors.js';
import { authOf } from './respond.js';
import { SvcStatus } from './status-codes.js';

/**
 * At most `limit` requests of one client in flight at once in this web process (BATCH_CONCURRENCY_PER_CLIENT
 * for batches, SEARCH_CONCURRENCY_PER_CLIENT for searches): one more is refused 4291 with `Retry-After: 1` before
 * its body or query is parsed, so one client's heavy work takes a bounded share of the process whatever its rate
 * limit leaves it. A slot is given back when the
 * answer is sent or the connection closes. The slot is taken after authentication and the rate limit, which
 * wait for the store and Redis (a batch, charged by its body, pays its tokens later: refused a slot, one before
 * its answer): a caller who hung up meanwhile (its `close` already fired) takes none, and its request goes no
 * further, since no one is left to answer.
 */
export function perClientSlots(limit: number, what: string): RequestHandler {
  const inFlight = new Map<number, number>();
  return (_req, res, next) => {
    if (res.closed) return;
    const { clientId } = authOf(res);
    const held = inFlight.get(clientId) ?? 0;
    if (held >= limit)
      throw new ApiError(
        SvcStatus.RATE_LIMITED,
        `Svc-Access-Key: more than ${limit} ${what} of this client at once; retry after 1 s`,
        { 'Retry-After': '1' },
      );
    inFlight.set(clientId, held + 1);
    res.once('close', () => {
      const left = (inFlight.get(clientId) ?? 1) - 1;
      if (left > 0) inFlight.set(clientId, left);
      else inFlight.delete(clientId);
    });
    next();
  };
}
