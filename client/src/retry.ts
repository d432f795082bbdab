// Which answers are retried and how long to wait: the same request (same Svc-RequestId, same body) is sent again,
// so a retry never doubles an order.

/** What one attempt got: an answer, or none (`httpStatus` 0: network error or time-out). */
export interface AttemptOutcome {
  httpStatus: number;
  svcStatus: readonly number[];
}

/** Svc-Status codes that say "later": rate limit (4291) and a dependency down or too many orders waiting (5030). */
export const RETRYABLE_CODES: readonly number[] = [4291, 5030];

/**
 * Retried: no answer, any 5xx, and 4291/5030. Any other 4xx is the request's own problem and is never retried
 * (4292 and 4293 are locks: sending again only prolongs them).
 */
export function isRetryable(outcome: AttemptOutcome): boolean {
  if (outcome.httpStatus === 0 || outcome.httpStatus >= 500) return true;
  if (outcome.svcStatus.some((code) => code === 4292 || code === 4293)) return false;
  return outcome.svcStatus.some((code) => RETRYABLE_CODES.includes(code));
}

export interface BackoffOptions {
  /** The first wait's upper bound; doubles per attempt. */
  baseMs?: number;
  /** No wait is longer than this unless the service asks for it with Retry-After. */
  maxMs?: number;
  random?: () => number;
  now?: () => number;
}

/**
 * The longest `Retry-After` the client waits for before sending again (5 minutes; the service asks for at most
 * a minute): a longer one is not waited for, the answer is the caller's (see OrdersClient). A timer cannot wait
 * past 24.8 days anyway: it would fire at once.
 */
export const MAX_RETRY_AFTER_MS = 300_000;

/** RFC 9110's HTTP date (IMF-fixdate), e.g. `Sun, 06 Nov 1994 08:49:37 GMT`. */
const HTTP_DATE = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/**
 * Milliseconds that `Retry-After` asks for (seconds, or an HTTP date; a past date is 0), or undefined when absent
 * or unreadable (a negative number included).
 */
export function retryAfterMs(
  header: string | null | undefined,
  now: () => number = Date.now,
): number | undefined {
  if (header === null || header === undefined || header.trim() === '') return undefined;
  const text = header.trim();
  // Seconds too many to count are Infinity: longer than any client waits.
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const date = HTTP_DATE.test(text) ? Date.parse(text) : NaN;
  return Number.isNaN(date) ? undefined : Math.max(0, date - now());
}

/**
 * The wait before retry number `attempt + 1` (attempt 0 is the first retry): what `Retry-After` says when the
 * service sent it, else exponential backoff with jitter, uniformly between half and all of
 * min(maxMs, baseMs * 2^attempt).
 */
export function retryDelayMs(
  attempt: number,
  retryAfter: string | null | undefined,
  { baseMs = 200, maxMs = 10_000, random = Math.random, now = Date.now }: BackoffOptions = {},
): number {
  const asked = retryAfterMs(retryAfter, now);
  if (asked !== undefined) return asked;
  const ceiling = Math.min(maxMs, baseMs * 2 ** attempt);
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
