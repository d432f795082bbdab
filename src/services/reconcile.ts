import type { Config } from '../config/config.js';
import { ItemStatus as S, type ItemStatusCode } from '../domain/item-status.js';
import type { OrderQueue } from '../queue/order.queue.js';
import { withLock, type LockResult } from '../redis/redis-lock.js';
import type { RedisClient } from '../redis/redis.js';
import type { StaleItemKey, StaleOrder, StaleOrderKey, Store } from '../store/port/store.port.js';
import { moveItem, type ItemLifecycleDeps } from './item-lifecycle.js';
import { syncPayment } from './payment-sync.js';
import { failOrder } from './process-order.js';
import type { MetricsRecorder } from '../metrics/metrics.recorder.js';

export interface ReconcileDeps extends ItemLifecycleDeps {
  store: Pick<Store, 'items' | 'ledger' | 'reconcile' | 'orders' | 'processing'>;
  metrics: Pick<MetricsRecorder, 'recordReconcileActions'>;
  queue: OrderQueue;
  redis: RedisClient;
  config: Pick<
    Config,
    | 'QUEUED_STALE_AFTER_S'
    | 'SHIP_DEADLINE_H'
    | 'EXTRA_SHIPPING_TIMEOUT_H'
    | 'MAX_PROCESS_ATTEMPTS'
    | 'ATTEMPT_LEASE_S'
    | 'REDIS_PREFIX'
  >;
}

/** What one pass changed: orders enqueued again or FAILED, items moved by a deadline, payments caught up. */
export interface ReconcileCounts {
  requeued: number;
  failed: number;
  unshipped: number;
  extraShippingTimedOut: number;
  /** Payments the gateway was brought to their ledger for (a crash or a gateway error had left them behind). */
  adjustmentsApplied: number;
  /** Payments whose ledger says less than nothing: a bug, logged and left for an operator (alert on it). */
  paymentTargetsBelowZero: number;
}

const BATCH = 200;
const HOUR_MS = 3_600_000;
/**
 * The pass's lease, extended every third of it while the pass runs. Short, because a lock asked for on a link
 * that froze may still reach Redis when the link thaws, for a pass that has long given up: nobody holds that
 * lease, and it keeps every clock's pass out until it expires (BENCHMARKS.md). A lease lost to a pause only
 * stops the pass at its next batch; every change is guarded in the store, so two passes never do it twice.
 */
const LOCK_TTL_MS = 6_000;
// States in which the order's job will still run: enqueueing again would be a no-op anyway.
const IN_QUEUE = new Set(['active', 'waiting', 'delayed', 'prioritized', 'waiting-children']);

/** A pass that did not run says why; the next tick (or the operator) tries again. */
export type PassResult =
  | { ran: true; counts: ReconcileCounts }
  | { ran: false; reason: 'redis unavailable' | 'another pass holds the lock' };

/**
 * One pass under the cluster-wide lock, waiting up to `waitMs` for another holder to finish.
 * `now` (default: the clock) is the time every deadline is measured against; every change is stamped with the
 * clock, so a pass run as if at another time (reconcile --now) writes no pretend time into items or events;
 * `signal` (a shutdown) ends the pass at its next batch, as losing the lock does.
 */
export async function runReconcilePass(
  deps: ReconcileDeps,
  options: { now?: number; waitMs?: number; signal?: AbortSignal } = {},
): Promise<PassResult> {
  // The lock and the queue both need Redis; deadlines measured in hours can wait for the next tick.
  if (deps.redis.status !== 'ready') return skipped(deps, 'redis unavailable');
  const key = `${deps.config.REDIS_PREFIX}:reconcile:lock`;
  let result: LockResult<ReconcileCounts>;
  try {
    result = await withLock(deps.redis, key, { ttlMs: LOCK_TTL_MS, waitMs: options.waitMs }, (lost) =>
      reconcileOnce(
        deps,
        options.now ?? deps.clock(),
        options.signal ? AbortSignal.any([lost, options.signal]) : lost,
      ),
    );
  } catch (err) {
    // Redis lost mid-pass: every step already done is guarded and complete, the next pass does the rest.
    if (await answers(deps.redis)) throw err;
    deps.logger.warn({ err: (err as Error).message }, 'reconcile pass ended early: redis unavailable');
    return { ran: false, reason: 'redis unavailable' };
  }
  if (!result.acquired) return skipped(deps, 'another pass holds the lock');
  await deps.metrics.recordReconcileActions({ ...result.value });
  return { ran: true, counts: result.value };
}

type SkipReason = Extract<PassResult, { ran: false }>['reason'];

const answers = (redis: RedisClient): Promise<boolean> =>
  redis.ping().then(
    () => true,
    () => false,
  );

function skipped(deps: ReconcileDeps, reason: SkipReason): PassResult {
  // An outage is worth a warning; another clock's pass is the lock doing its job.
  const level = reason === 'redis unavailable' ? 'warn' : 'info';
  deps.logger[level]({ reason }, `reconcile pass skipped: ${reason}`);
  return { ran: false, reason };
}

interface Deadline {
  from: ItemStatusCode;
  to: ItemStatusCode;
  hours: (config: ReconcileDeps['config']) => number;
  count: 'unshipped' | 'extraShippingTimedOut';
}

/** docs/api.md#item-statuses-and-moves: what a stale status becomes, after how long in it. */
const DEADLINES: readonly Deadline[] = [
  { from: S.ORDERED, to: S.ITEM_UNAVAILABLE, hours: (c) => c.SHIP_DEADLINE_H, count: 'unshipped' },
  {
    from: S.EXTRA_SHIPPING_ACCEPTED,
    to: S.ITEM_UNAVAILABLE,
    hours: (c) => c.SHIP_DEADLINE_H,
    count: 'unshipped',
  },
  {
    from: S.EXTRA_SHIPPING_REQUESTED,
    to: S.EXTRA_SHIPPING_REJECTED,
    hours: (c) => c.EXTRA_SHIPPING_TIMEOUT_H,
    count: 'extraShippingTimedOut',
  },
];

/**
 * One reconciliation pass. Every step is a guarded, idempotent change in its own transaction, so a pass may
 * run again, or stop anywhere (`lost` is checked between batches), without moving anything twice.
 */
export async function reconcileOnce(
  deps: ReconcileDeps,
  now: number,
  lost: AbortSignal = new AbortController().signal,
): Promise<ReconcileCounts> {
  const startedAt = Date.now();
  const counts: ReconcileCounts = {
    requeued: 0,
    failed: 0,
    unshipped: 0,
    extraShippingTimedOut: 0,
    adjustmentsApplied: 0,
    paymentTargetsBelowZero: 0,
  };
  await syncPendingPayments(deps, counts, lost);
  for (const deadline of DEADLINES) counts[deadline.count] += await expire(deps, deadline, now, lost);
  await forEachBatch(
    (after?: StaleOrderKey) =>
      deps.store.reconcile.staleOrders(now - deps.config.QUEUED_STALE_AFTER_S * 1000, BATCH, after),
    (order) => ({ createdAt: order.createdAt, orderId: order.orderId }),
    lost,
    async (order) => {
      const outcome = await requeueOrFail(deps, order, now);
      if (outcome !== 'in-queue') counts[outcome] += 1;
    },
  );
  const finishedAt = Date.now();
  const at = new Date(now).toISOString();
  deps.logger.info({ ...counts, now: at, startedAt, finishedAt }, 'reconcile pass done');
  return counts;
}

/** Items in the deadline's status for longer than it allows move on; returns how many did. */
async function expire(deps: ReconcileDeps, deadline: Deadline, now: number, lost: AbortSignal) {
  const { from, to } = deadline;
  const changedBefore = now - deadline.hours(deps.config) * HOUR_MS;
  let moved = 0;
  await forEachBatch(
    (after?: StaleItemKey) => deps.store.reconcile.staleItems(from, changedBefore, BATCH, after),
    (item) => ({ statusChangedAt: item.statusChangedAt, orderItemId: item.orderItemId }),
    lost,
    async ({ orderItemId }) => {
      // The guard skips an item that the seller or buyer moved since the batch was read.
      // Measured from `now`, stamped with the clock: a pretend time (reconcile --now) is written nowhere.
      const outcome = await moveItem(deps, { orderItemId, to, expect: { from, changedBefore } });
      if (outcome.kind === 'moved') moved += 1;
    },
  );
  return moved;
}

/**
 * A stale order whose job is gone (Redis lost it, or it failed for good while the order was left unsettled)
 * is enqueued again, or FAILED when its attempts are used up. One whose job will still run is left alone.
 */
async function requeueOrFail(deps: ReconcileDeps, order: StaleOrder, now: number) {
  const job = await deps.queue.findJob(order.orderId);
  const state = job ? job.state : 'missing';
  if (IN_QUEUE.has(state)) return 'in-queue';
  if (order.attempts >= deps.config.MAX_PROCESS_ATTEMPTS) {
    // A worker inside the last attempt (its job lost with Redis) holds the lease: that attempt settles it.
    const outcome = await failOrder(deps, order.orderId, { leaseFreeAt: now });
    return outcome === 'failed' ? 'failed' : 'in-queue';
  }
  // A finished job keeps its id, and an add with that id would be ignored.
  if (job) await job.remove();
  await deps.queue.enqueue(order.orderId);
  deps.logger.info(
    { orderId: order.orderId, attempts: order.attempts, jobState: state },
    'order enqueued again',
  );
  return 'requeued';
}

/** Payments whose ledger moved on without the gateway (a crash, a gateway error, a call not authorised yet). */
async function syncPendingPayments(deps: ReconcileDeps, counts: ReconcileCounts, lost: AbortSignal) {
  await forEachBatch(
    (after?: number) => deps.store.reconcile.pendingPayments(BATCH, after),
    (orderId) => orderId,
    lost,
    async (orderId) => {
      try {
        const outcome = await syncPayment(deps, orderId);
        if (outcome === 'applied') counts.adjustmentsApplied += 1;
        if (outcome === 'below-zero') counts.paymentTargetsBelowZero += 1;
      } catch (err) {
        deps.logger.warn({ err, orderId }, 'payment adjustment still pending');
      }
    },
  );
}

/** Keyset-paged batches, so rows that stay put are read once; stops between batches once `lost` aborts. */
async function forEachBatch<T, K>(
  fetch: (after: K | undefined) => Promise<T[]>,
  keyOf: (row: T) => K,
  lost: AbortSignal,
  handle: (row: T) => Promise<void>,
): Promise<void> {
  let after: K | undefined;
  for (;;) {
    const batch = await fetch(after);
    for (const row of batch) await handle(row);
    const last = batch.at(-1);
    if (batch.length < BATCH || last === undefined || lost.aborted) return;
    after = keyOf(last);
  }
}
