import type { Config } from '../config/config.js';
import type { Logger } from '../logger.js';
import { withLock } from '../redis/redis-lock.js';
import type { RedisClient } from '../redis/redis.js';
import type { Store } from '../store/port/store.port.js';
import { CURSOR_TTL_MS } from './search-cursor.js';

const DAY_MS = 86_400_000;
/** Short, as reconciliation's (reconcile.ts): a lock that reaches Redis after its asker gave up holds no one long. */
const LOCK_TTL_MS = 6_000;

export interface RetentionDeps {
  store: Pick<Store, 'retention'>;
  redis: RedisClient;
  logger: Logger;
  clock: () => number;
  config: Pick<Config, 'EVENT_RETENTION_DAYS' | 'REDIS_PREFIX'>;
}

export interface RetentionOptions {
  /** Rows per batch at most, each batch one short transaction. */
  batchSize?: number;
  /**
   * How long a batch may hold the store's write lock: each step starts small, a batch that takes longer cuts the
   * next one's size to fit (at least by half; a quick one doubles it, up to batchSize), so that a web write
   * waiting WEB_DB_BUSY_TIMEOUT_MS gets its turn.
   */
  batchTargetMs?: number;
  /** The clock batches are timed by (tests give their own). */
  timer?: () => number;
  /**
   * Rest between two batches, so that other writers take the lock in between. SQLite's busy handler sleeps up to
   * 100 ms between its tries: a shorter rest lets a waiting writer sleep through it and starve (BENCHMARKS.md).
   * The web, the workers and the clock now try every 1–2 ms (wait-unblocked.ts); the CLI still waits in the busy
   * handler.
   */
  pauseMs?: number;
  /**
   * Free pages given back per batch at most (SQLite), each batch one short write: each page moved from the
   * end of the file rewrites its parent pages, so a large batch holds the write lock long (BENCHMARKS.md).
   */
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
  /** The longest batch of each step (ms; 0 for a step that made none). */
  longestBatchMsByStep: Record<RetentionStep, number>;
}

export type RetentionStep = 'deliveries' | 'events' | 'cursors' | 'reclaim';

export type RetentionResult =
  | { ran: true; counts: RetentionCounts }
  | { ran: false; reason: 'redis unavailable' | 'another pass holds the lock' };

/**
 * One retention pass (docs/api.md#operations) under a deployment-wide lock: finished webhook deliveries and
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

/** The pass itself, without the lock (tests call it with a fake store). */
export async function pruneOnce(
  deps: RetentionDeps,
  options: RetentionOptions,
  stop: AbortSignal,
): Promise<RetentionCounts> {
  const { batchSize = 500, batchTargetMs = 50, pauseMs = 100, reclaimPages = 64 } = options;
  const timer = options.timer ?? (() => performance.now());
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
    longestBatchMsByStep: { deliveries: 0, events: 0, cursors: 0, reclaim: 0 },
  };
  /**
   * Runs `step` until it does less than it was asked or the pass is stopped; returns the total it did. A step
   * starts at an eighth of its full size (its pages may be cold, a first batch slow: BENCHMARKS.md), doubles
   * while its batches are quick, and a slow one cuts the next to what would have taken the target (at least
   * by half).
   */
  const batches = async (name: RetentionStep, step: (size: number) => Promise<number>, full: number) => {
    let total = 0;
    let size = Math.max(1, Math.ceil(full / 8));
    while (!stop.aborted) {
      const began = timer();
      const done = await step(size);
      const ms = timer() - began;
      if (ms > counts.longestBatchMs) Object.assign(counts, { longestBatchMs: ms, longestBatch: name });
      counts.longestBatchMsByStep[name] = Math.max(counts.longestBatchMsByStep[name], ms);
      counts.batches++;
      total += done;
      if (done < size) break;
      if (ms > batchTargetMs)
        size = Math.max(1, Math.min(Math.floor(size / 2), Math.floor((size * batchTargetMs) / ms)));
      else if (ms < batchTargetMs / 4) size = Math.min(full, size * 2);
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
    return total;
  };
  // Deliveries first: an event goes only once no delivery names it.
  const { pruneDeliveries, pruneEvents, pruneCursors, reclaimSpace } = deps.store.retention;
  counts.deliveries = await batches('deliveries', (size) => pruneDeliveries(before, size), batchSize);
  counts.events = await batches('events', (size) => pruneEvents(before, size), batchSize);
  counts.cursors = await batches('cursors', (size) => pruneCursors(now - CURSOR_TTL_MS, size), batchSize);
  counts.pagesReclaimed = await batches('reclaim', (size) => reclaimSpace(size), reclaimPages);
  return counts;
}
