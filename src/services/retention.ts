import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { withLock } from '../redis/redis-lock.js';
import type { RedisClient } from '../redis/redis.js';
import type { Store } from '../store/store.port.js';
import { CURSOR_TTL_MS } from './search-orders.js';

const DAY_MS = 86_400_000;
const LOCK_TTL_MS = 30_000;

export interface RetentionDeps {
  store: Pick<Store, 'retention'>;
  redis: RedisClient;
  logger: Logger;
  clock: () => number;
  config: Pick<Config, 'EVENT_RETENTION_DAYS' | 'REDIS_PREFIX'>;
}

export interface RetentionOptions {
  /** Rows per batch, each batch one short transaction. */
  batchSize?: number;
  /**
   * Rest between two batches, so that other writers take the lock in between. SQLite's busy handler sleeps up to
   * 100 ms between its tries: a shorter rest lets a waiting writer sleep through it and starve (measured:
   * BENCHMARKS.md, Retention).
   */
  pauseMs?: number;
  /** Free pages given back per step (SQLite), each step one short write. */
  reclaimPages?: number;
  signal?: AbortSignal;
}

/** What one pass deleted, and the longest single batch (the longest the store's write lock was held for it). */
export interface RetentionCounts {
  deliveries: number;
  events: number;
  cursors: number;
  pagesReclaimed: number;
  batches: number;
  longestBatchMs: number;
  /** Which step the longest batch was: deliveries, events, cursors or reclaim. */
  longestBatch: string;
}

export type RetentionResult =
  | { ran: true; counts: RetentionCounts }
  | { ran: false; reason: 'redis unavailable' | 'another pass holds the lock' };

/**
 * One retention pass (CONTRACT.md section 13) under a deployment-wide lock: finished webhook deliveries and
 * order events older than EVENT_RETENTION_DAYS, and expired search cursors, deleted oldest first in small
 * batches with a rest between them; then (SQLite) the freed pages given back, a few at a time. What is still to
 * be delivered (a pending delivery, and its event) is never deleted, nor anything younger than the window, which
 * `webhook:replay --since` reaches. Orders, items, payments and the ledger are never touched.
 */
export async function runRetentionPass(
  deps: RetentionDeps,
  options: RetentionOptions = {},
): Promise<RetentionResult> {
  if (deps.redis.status !== 'ready') return { ran: false, reason: 'redis unavailable' };
  const key = `${deps.config.REDIS_PREFIX}:retention:lock`;
  const result = await withLock(deps.redis, key, { ttlMs: LOCK_TTL_MS }, (lost) =>
    pruneOnce(deps, options, options.signal ? AbortSignal.any([lost, options.signal]) : lost),
  );
  if (!result.acquired) return { ran: false, reason: 'another pass holds the lock' };
  const counts = result.value;
  if (counts.deliveries + counts.events + counts.cursors + counts.pagesReclaimed > 0)
    deps.logger.info(counts, 'retention pass');
  return { ran: true, counts };
}

async function pruneOnce(
  deps: RetentionDeps,
  options: RetentionOptions,
  stop: AbortSignal,
): Promise<RetentionCounts> {
  const { batchSize = 500, pauseMs = 100, reclaimPages = 256 } = options;
  const now = deps.clock();
  const before = now - deps.config.EVENT_RETENTION_DAYS * DAY_MS;
  const counts: RetentionCounts = {
    deliveries: 0,
    events: 0,
    cursors: 0,
    pagesReclaimed: 0,
    batches: 0,
    longestBatchMs: 0,
    longestBatch: '',
  };
  /** Runs `step` until it does less than `full` or the pass is stopped; returns the total it did. */
  const batches = async (name: string, step: () => Promise<number>, full: number): Promise<number> => {
    let total = 0;
    while (!stop.aborted) {
      const began = performance.now();
      const done = await step();
      const ms = performance.now() - began;
      if (ms > counts.longestBatchMs) Object.assign(counts, { longestBatchMs: ms, longestBatch: name });
      counts.batches++;
      total += done;
      if (done < full) break;
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
    return total;
  };
  // Deliveries first: an event goes only once no delivery names it.
  const { pruneDeliveries, pruneEvents, pruneCursors, reclaimSpace } = deps.store.retention;
  counts.deliveries = await batches('deliveries', () => pruneDeliveries(before, batchSize), batchSize);
  counts.events = await batches('events', () => pruneEvents(before, batchSize), batchSize);
  counts.cursors = await batches('cursors', () => pruneCursors(now - CURSOR_TTL_MS, batchSize), batchSize);
  counts.pagesReclaimed = await batches('reclaim', () => reclaimSpace(reclaimPages), reclaimPages);
  return counts;
}
