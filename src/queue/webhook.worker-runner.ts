import { UnrecoverableError, Worker } from 'bullmq';
import type { Deps } from '../deps.js';
import type { JobRecord } from '../metrics/metrics.recorder.js';
import { deliverWebhook } from '../services/deliver-webhook.js';
import { startRelay } from '../services/webhook-relay.js';
import { createWebhookSender } from '../webhooks/webhook-sender.js';
import { createBlockingRedis, createRedis } from './redis.js';
import { createWebhookQueue, WEBHOOK_QUEUE, WebhookJobs, type WebhookJobData } from './webhook.queue.js';

/**
 * Starts the webhooks side of a worker process: a BullMQ worker of its own queue, with its own connection and
 * concurrency (a slow receiver holds a delivery slot, never an order slot), and the relay that hands the
 * store's outbox to that queue. Resolves with a function that stops both cleanly.
 */
export async function startWebhookWorker(deps: Deps) {
  const { config, logger } = deps;
  const queue = createWebhookQueue(
    createRedis(config, `${config.QUEUE_PREFIX}-webhook-queue`),
    config.REDIS_PREFIX,
    logger,
  );
  const sender = createWebhookSender({
    allowPrivate: config.WEBHOOK_ALLOW_PRIVATE,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
  });
  const deliverDeps = { ...deps, sender };
  const connection = createBlockingRedis(config, `${config.QUEUE_PREFIX}-webhooks`);
  const worker = new Worker<WebhookJobData>(
    WEBHOOK_QUEUE,
    async (job) => {
      const started = performance.now();
      let result: JobRecord['result'] = 'failed';
      try {
        const parsed = WebhookJobs['deliver-webhook'].safeParse(job.data);
        if (!parsed.success)
          throw new UnrecoverableError(`bad payload for ${job.name}: ${parsed.error.message}`);
        const { deliveryId, attempt } = parsed.data;
        await deliverWebhook(
          { ...deliverDeps, logger: logger.child({ jobId: job.id }) },
          deliveryId,
          attempt,
        );
        result = 'completed';
      } finally {
        const seconds = (performance.now() - started) / 1000;
        await deps.metrics.recordJob({ queue: WEBHOOK_QUEUE, name: job.name, seconds, result });
      }
    },
    {
      connection,
      prefix: config.REDIS_PREFIX,
      concurrency: config.WEBHOOK_CONCURRENCY,
      // An attempt takes at most WEBHOOK_TIMEOUT_MS (10 s); a dead worker's attempt is taken over soon after.
      lockDuration: 15_000,
      stalledInterval: 5_000,
      maxStalledCount: 1,
    },
  );
  worker.on('error', (err) => logger.error({ err }, 'webhook worker error'));
  worker.on('failed', (job, err) =>
    logger.warn({ jobId: job?.id, attemptsMade: job?.attemptsMade, err: err.message }, 'webhook job failed'),
  );
  await worker.waitUntilReady();
  const relay = startRelay({ store: deps.store, queue, clock: deps.clock, logger });
  return {
    worker,
    async stop() {
      await relay.stop();
      // close() waits for the attempts in flight; each ends within WEBHOOK_TIMEOUT_MS.
      await worker.close();
      await queue.close();
      sender.close();
      connection.disconnect();
    },
  };
}
