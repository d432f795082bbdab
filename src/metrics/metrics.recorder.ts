import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from '../redis/redis.js';
import { ItemStatus } from '../domain/item-status.js';
import type { Logger } from '../logger.js';
import { SharedCounter, SharedHistogram } from './shared.metrics.js';

const JOB_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The metrics that workers and the clock produce and web processes expose (see shared.metrics.ts). */
export function sharedMetrics(redis: RedisClient, prefix: string) {
  return {
    jobDuration: new SharedHistogram(
      redis,
      prefix,
      'bookorders_job_duration_seconds',
      'Time a worker spent on one job, by queue, job name and result (completed or failed)',
      JOB_DURATION_BUCKETS,
    ),
    ordersSettled: new SharedCounter(
      redis,
      prefix,
      'bookorders_orders_settled_total',
      'Orders a worker finished, by outcome: ordered (payment authorised), declined, not_purchased, failed',
    ),
    itemsSettled: new SharedCounter(
      redis,
      prefix,
      'bookorders_order_items_settled_total',
      'Items a worker moved out of QUEUED, by the status code they got',
    ),
    reconcileActions: new SharedCounter(
      redis,
      prefix,
      'bookorders_reconcile_actions_total',
      'Changes made by reconciliation passes, by kind',
    ),
    reconcilePasses: new SharedCounter(
      redis,
      prefix,
      'bookorders_reconcile_passes_total',
      'Reconciliation passes that ran',
    ),
    webhookAttempts: new SharedCounter(
      redis,
      prefix,
      'bookorders_webhook_attempts_total',
      'Webhook delivery attempts a worker made, by outcome: delivered, retry (failed, tried again later), ' +
        'gave-up (failed for the last time: the webhook is marked failing), stale or dropped (nothing sent)',
    ),
  };
}

export type OrderOutcome = 'ordered' | 'declined' | 'not_purchased' | 'failed';

/** One word for what happened to an order, from its items' statuses after the worker settled it. */
export function outcomeOf(statuses: readonly number[]): OrderOutcome {
  if (statuses.includes(ItemStatus.ORDERED)) return 'ordered';
  if (statuses.includes(ItemStatus.CREDIT_CARD_REJECTED)) return 'declined';
  if (statuses.length > 0 && statuses.every((s) => s === ItemStatus.FAILED)) return 'failed';
  return 'not_purchased';
}

export interface JobRecord {
  queue: string;
  name: string;
  seconds: number;
  result: 'completed' | 'failed';
}

/** What any process adds to the deployment's metrics; it never throws: a lost sample is only logged. */
export interface MetricsRecorder {
  recordJob(job: JobRecord): Promise<void>;
  /** Counts one settled order by outcome and its items by status. */
  recordOrderSettled(itemStatuses: readonly number[]): Promise<void>;
  /** Counts one reconciliation pass and what it changed, e.g. `{ requeued: 2, unshipped: 1 }`. */
  recordReconcileActions(counts: Readonly<Record<string, number>>): Promise<void>;
  /** Counts one webhook delivery attempt by its outcome (not a deferral: no attempt was made). */
  recordWebhookAttempt(outcome: string): Promise<void>;
}

export function createMetricsRecorder(redis: RedisClient, prefix: string, logger: Logger): MetricsRecorder {
  const metrics = sharedMetrics(redis, prefix);
  const send = async (fill: (pipeline: ChainableCommander) => void) => {
    const pipeline = redis.pipeline();
    fill(pipeline);
    try {
      await pipeline.exec();
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'metrics not recorded: redis unavailable');
    }
  };
  return {
    recordJob: ({ queue, name, seconds, result }) =>
      send((p) => metrics.jobDuration.observe(p, { queue, job: name, result }, seconds)),
    recordOrderSettled: (itemStatuses) =>
      send((p) => {
        metrics.ordersSettled.inc(p, { outcome: outcomeOf(itemStatuses) });
        const byStatus = new Map<number, number>();
        for (const status of itemStatuses) byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
        for (const [status, n] of byStatus) metrics.itemsSettled.inc(p, { status: String(status) }, n);
      }),
    recordReconcileActions: (counts) =>
      send((p) => {
        metrics.reconcilePasses.inc(p, {});
        for (const [kind, n] of Object.entries(counts)) {
          if (Number.isInteger(n) && n > 0) metrics.reconcileActions.inc(p, { kind }, n);
        }
      }),
    recordWebhookAttempt: (outcome) => send((p) => metrics.webhookAttempts.inc(p, { outcome })),
  };
}
