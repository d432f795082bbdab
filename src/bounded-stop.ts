// How long a stopping process waits on each thing that needs Redis: a frozen link (no byte passes, the
// connection stays open) would hold a close or a flush for ever, past the process's shutdown grace (run-process.ts).

/** For a close or a flush: what is still unsent after it is lost (logged where it is sent). */
export const CLOSE_WAIT_MS = 5_000;

/**
 * For a worker's jobs in flight to end (jobs take milliseconds): a job not marked finished by then stays active
 * and is taken over by another worker once its lock runs out; every job is safe to run twice.
 */
export const JOBS_WAIT_MS = 10_000;

/** Resolves when `promise` settles (a rejection is not passed on) or after `ms`, whichever comes first. */
export function settledWithin(promise: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise((resolve) => (timer = setTimeout(resolve, ms)));
  return Promise.race([promise.catch(() => undefined), waited]).finally(() => clearTimeout(timer));
}

/**
 * For a web's requests in flight once its drain is over and it stops listening: longer than a synchronous order's
 * default wait (ORDER_WAIT_MS, 10 s). Then the connections still open are closed, so that drain (at most 10 s),
 * requests and closing the connections to Redis and the store all end inside the shutdown grace of 30 s
 * (run-process.ts), with exit 0.
 */
export const REQUESTS_WAIT_MS = 12_000;
