import type { RequestHandler } from 'express';
import { ApiError } from './errors.js';
import { SvcStatus } from './status-codes.js';

/**
 * Most name=value pairs a query of the signed API may hold (docs/api.md#limits): a search's criteria are a dozen
 * names, with `orderId` and `orderItemId` repeated for as many ids as a page of 100 orders would show, and room
 * to spare. Node already bounds a request's line and headers to 16 KB together, some 8,000 pairs: every reader of a
 * query (the canonical query a signature is checked against, the search's criteria) works on at most this many.
 */
export const MAX_QUERY_PAIRS = 200;

export const TOO_MANY_PAIRS_MESSAGE = `query: more than ${MAX_QUERY_PAIRS} parameters (name=value pairs); send at most ${MAX_QUERY_PAIRS}`;

/**
 * Whether the raw query (without `?`) holds more than `max` pairs, counted as every reader counts them: the parts
 * between `&`s that are not empty. One pass over the text, stopping once past `max`.
 */
export function hasMorePairsThan(rawQuery: string, max: number): boolean {
  let pairs = 0;
  let start = 0;
  while (start <= rawQuery.length) {
    const end = rawQuery.indexOf('&', start);
    const stop = end === -1 ? rawQuery.length : end;
    if (stop > start && ++pairs > max) return true;
    start = stop + 1;
  }
  return false;
}

/** Whether every `%` of the raw query starts an escape and the escapes decode to UTF-8. */
function validEscapes(rawQuery: string): boolean {
  if (!rawQuery.includes('%')) return true;
  try {
    decodeURIComponent(rawQuery);
    return true;
  } catch {
    return false;
  }
}

/**
 * 4220 for a query the signed API refuses before anything reads it, first of all (before authentication, which
 * reads it to check the signature): more than MAX_QUERY_PAIRS pairs, or a `%` not followed by two hex digits or
 * escapes that are not UTF-8 (`%FF`), which the canonical query would keep as text and sign the same as their
 * escaped form (`%25FF`).
 */
export const queryGuard: RequestHandler = (req, _res, next) => {
  const at = req.url.indexOf('?');
  if (at !== -1) {
    const rawQuery = req.url.slice(at + 1);
    if (hasMorePairsThan(rawQuery, MAX_QUERY_PAIRS))
      throw new ApiError(SvcStatus.INVALID, TOO_MANY_PAIRS_MESSAGE);
    if (!validEscapes(rawQuery))
      throw new ApiError(
        SvcStatus.INVALID,
        'query: an invalid percent escape; each % must start %XX escapes of UTF-8 (a % itself is %25)',
      );
  }
  next();
};
