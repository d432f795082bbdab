import type { JobsOptions, Telemetry } from 'bullmq';
import { bullmq } from './bullmq.js';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import { queueTelemetry } from '../tracing/tracing.js';
import type { DeliveryAttempt } from '../store/port/store.port.js';
import type { RedisClient } from '../redis/redis.js';

export const WEBHOOK_QUEUE = 'webhooks';

/**
 * The closed catalogue of this queue's jobs: each name has one payload schema. A payload of any protocol version
 * (protocol.ts) is read: `v` absent is version 1, and fields a later release adds are ignored; this release writes
 * version 1 exactly, which the workers of earlier releases, strict about unknown fields, read too.
 */
export const WebhookJobs = {
  'deliver-webhook': z.object({
    deliveryId: z.number().int().positive(),
    attempt: z.number().int().positive(),
    // Absent from jobs queued before it was added: the worker then reads it from the store.
    webhookId: z.number().int().positive().optional(),
    v: z.number().int().positive().optional(),
  }),
} as const;

export type WebhookJobName = keyof typeof WebhookJobs;
export type WebhookJobData = z.infer<(typeof WebhookJobs)['deliver-webhook']>;

/** Deterministic per delivery and attempt: the relay may hand an attempt again without duplicating it. */
export const deliveryJobId = (deliveryId: number, attempt: number): string =>
  `delivery-${deliveryId}-${attempt}`;

export interface WebhookQueue {
  /** Adds each attempt as a job, delayed until it is due. */
  enqueue(attempts: readonly DeliveryAttempt[], now: number): Promise<void>;
  /** Of these attempts, those whose job is not in the queue (Redis lost it, or it failed for good). */
  missing(attempts: readonly DeliveryAttempt[]): Promise<DeliveryAttempt[]>;
  close(): Promise<void>;
}

// Retries here are for a store that did not answer; receivers' failures are attempts the store counts.
const OPTIONS: JobsOptions = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 1000 },
  // Gone once finished, so that the relay can hand a lost attempt again under the same id.
  removeOnComplete: true,
  removeOnFail: true,
};

/** The producer side of the webhooks queue; it owns `connection` and closes it with the queue. */
export function createWebhookQueue(connection: RedisClient, prefix: string, logger: Logger): WebhookQueue {
  const queue = new bullmq.Queue<WebhookJobData, void, WebhookJobName>(WEBHOOK_QUEUE, {
    connection,
    prefix,
    telemetry: queueTelemetry<Telemetry>(),
  });
  queue.on('error', (err) => logger.debug({ err: err.message }, 'webhook queue connection error'));
  return {
    async enqueue(attempts, now) {
      await queue.addBulk(
        attempts.map(({ deliveryId, webhookId, attempt, dueAt }) => ({
          name: 'deliver-webhook' as const,
          data: { deliveryId, webhookId, attempt },
          opts: { ...OPTIONS, jobId: deliveryJobId(deliveryId, attempt), delay: Math.max(0, dueAt - now) },
        })),
      );
    },
    async missing(attempts) {
      if (attempts.length === 0) return [];
      // One round trip; the keys share the hash-tagged prefix, so one Redis Cluster slot too.
      const pipeline = connection.pipeline();
      for (const a of attempts) pipeline.exists(queue.toKey(deliveryJobId(a.deliveryId, a.attempt)));
      const found = (await pipeline.exec()) ?? [];
      return attempts.filter((_, i) => {
        const [err, count] = found[i] ?? [null, 0];
        if (err) throw err;
        return count === 0;
      });
    },
    async close() {
      await queue.close();
      connection.disconnect();
    },
  };
}
