import type { Logger } from '../logger.js';
import type { RedisClient } from '../redis/redis.js';
import { whenReady } from '../redis/redis-lock.js';
import type { Store, StoreCounts } from '../store/port/store.port.js';

// Items by status and unsettled orders by phase are counts over the whole store: a scan that grows with it.
// So no scrape counts them: the clock counts them at most once every STORE_COUNTS_EVERY_S across the whole
// deployment (whichever clock takes the turn in Redis) and publishes them in Redis, where every web process's
// scrape reads them with one GET, at the same cost at any store size.

export interface PublishedCounts extends StoreCounts {
  /** When the counts were taken (ms since the epoch). */
  at: number;
}

export const countsKey = (prefix: string) => `${prefix}:metrics:store-counts`;
const turnKey = (prefix: string) => `${prefix}:metrics:store-counts:turn`;

/** Counts the store now and publishes the counts for every web process's scrape. */
export async function publishStoreCounts(
  store: Pick<Store, 'counts'>,
  redis: RedisClient,
  prefix: string,
): Promise<void> {
  const counts = await store.counts();
  const published: PublishedCounts = { ...counts, at: Date.now() };
  await redis.set(countsKey(prefix), JSON.stringify(published));
}

/**
 * The counts read the whole store, so their cost grows with it (BENCHMARKS.md): a count that took `t` keeps
 * the next one away for at least COUNT_SPACING × `t`, so that counting takes at most 1/COUNT_SPACING of the
 * database's time however large the store grows.
 */
export const COUNT_SPACING = 20;

/**
 * The clock's pass, run every `everyMs` (src/processes/clock.process.ts): takes the deployment's turn to count
 * (`SET NX PX`, so however many clocks run, the store is counted at most once per period, or per COUNT_SPACING
 * times the last count's duration when that is longer) and publishes the counts. A failure is a warning.
 */
export function countStoreOnTurn(
  deps: { store: Pick<Store, 'counts'>; redis: RedisClient; prefix: string; logger: Logger },
  everyMs: number,
): () => Promise<void> {
  return async () => {
    try {
      // A fail-fast connection drops commands until it is ready: the first pass, at the clock's start, waits for it.
      await whenReady(deps.redis, everyMs);
      // The turn lasts a little less than the period, so this clock's next pass finds it free again.
      const turn = await deps.redis.set(turnKey(deps.prefix), '1', 'PX', Math.max(1, everyMs - 250), 'NX');
      if (turn !== 'OK') return;
      const started = performance.now();
      try {
        await publishStoreCounts(deps.store, deps.redis, deps.prefix);
      } finally {
        // A long count, or one that failed after a while (DATABASE_TIMEOUT_MS), holds the turn longer (from now),
        // for every clock of the deployment.
        const spaced = Math.ceil((performance.now() - started) * COUNT_SPACING);
        if (spaced > everyMs) await deps.redis.pexpire(turnKey(deps.prefix), spaced);
      }
    } catch (err) {
      deps.logger.warn(
        { err: (err as Error).message },
        'store counts not published; the next tick tries again',
      );
    }
  };
}
