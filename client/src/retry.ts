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

/** Milliseconds that `Retry-After` asks for (seconds, or an HTTP date), or undefined when absent or unreadable. */
export function retryAfterMs(
  header: string | null | undefined,
  now: () => number = Date.now,
): number | undefined {
  if (header === null || header === undefined || header.trim() === '') return undefined;
  const text = header.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const date = Date.parse(text);
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
