import { bullmq } from '../queue/bullmq.js';
import type { Deps } from '../deps.js';
import { CLAIM_START_WINDOW_MS, deliverFairly, webhookClients } from '../services/deliver-webhook.js';
import { startRelay } from './webhook.relay-runner.js';
import { createWebhookSender } from '../webhooks/webhook-sender.js';
import { clientShare, createClientSlots } from '../webhooks/client-slots.js';
import { createEndpointGate } from '../redis/endpoint-gate.js';
import { createMetricsRecorder } from '../metrics/metrics.recorder.js';
import { createBlockingRedis, createRedis } from '../redis/redis.js';
import { CLOSE_WAIT_MS, JOBS_WAIT_MS, settledWithin } from '../bounded-stop.js';
import { jobProcessor } from './job-processor.js';
import { workerOptions } from './worker-options.js';
import {
  createWebhookQueue,
  WEBHOOK_QUEUE,
  WebhookJobs,
  type WebhookJobData,
} from '../queue/webhook.queue.js';

/** The longest pause of an endpoint that keeps failing, as the longest wait between attempts. */
const MAX_PAUSE_MS = 3_600_000;
/** A client's attempts under way longer than this make it slow: its others wait in the queue, not in a slot. */
const CLIENT_SLOW_AFTER_MS = 1000;

/**
 * Starts the webhooks side of a worker process: a BullMQ worker of its own queue, with its own connection and
 * concurrency (a slow receiver holds a delivery slot, never an order slot, and at most its endpoint's and its
 * client's share of them: see deliverFairly), and the relay that hands the store's outbox to that queue. Resolves with a function that stops both cleanly.
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
    connectTimeoutMs: config.WEBHOOK_CONNECT_TIMEOUT_MS,
  });
  const gateConnection = createRedis(config, `${config.QUEUE_PREFIX}-webhook-gate`);
  gateConnection.on('error', (err) => logger.debug({ err: err.message }, 'webhook gate connection error'));
  const gate = createEndpointGate({
    redis: gateConnection,
    prefix: config.REDIS_PREFIX,
    perEndpoint: config.WEBHOOK_CONCURRENCY_PER_ENDPOINT,
    // Longer than an attempt can take (its claim's start window, then the time-out), so only a dead worker's
    // slot is ever freed by expiry.
    holdMs: CLAIM_START_WINDOW_MS + config.WEBHOOK_TIMEOUT_MS + 5000,
    breakerFailures: config.WEBHOOK_BREAKER_FAILURES,
    pauseMs: config.WEBHOOK_BREAKER_PAUSE_MS,
    maxPauseMs: MAX_PAUSE_MS,
    clock: deps.clock,
  });
  const clientSlots = createClientSlots({
    perClient: clientShare(config),
    slowAfterMs: CLIENT_SLOW_AFTER_MS,
    clock: deps.clock,
  });
  const deliverDeps = { ...deps, sender, gate, clientSlots, clientOf: webhookClients(deps.store) };
  const connection = createBlockingRedis(config, `${config.QUEUE_PREFIX}-webhooks`);
  // On the connection that then marks each job finished, like the order worker's.
  const metrics = createMetricsRecorder(connection, config.REDIS_PREFIX, logger);
  const worker = new bullmq.Worker<WebhookJobData>(
    WEBHOOK_QUEUE,
    jobProcessor({
      queue: WEBHOOK_QUEUE,
      schema: WebhookJobs['deliver-webhook'],
      metrics,
      async work(data, job) {
        const outcome = await deliverFairly(
          { ...deliverDeps, logger: logger.child({ jobId: job.id }) },
          data,
        );
        // Its endpoint is busy or paused: the job waits in the queue, not in a slot, and is not an attempt.
        if (typeof outcome === 'object') return { waitMs: outcome.waitMs };
        // Not awaited: summed into the recorder's next publish, with the job's own duration.
        void metrics.recordWebhookAttempt(outcome);
        return 'completed';
      },
    }),
    workerOptions(config, connection, {
      concurrency: config.WEBHOOK_CONCURRENCY,
      // An attempt takes at most WEBHOOK_TIMEOUT_MS (10 s); a dead worker's attempt is taken over soon after.
      lockDuration: 15_000,
      maxStalledCount: 1,
    }),
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
      // close() waits for the attempts in flight; each ends within WEBHOOK_TIMEOUT_MS, and is marked finished
      // unless Redis cannot be reached (bounded-stop.ts).
      await settledWithin(worker.close(), JOBS_WAIT_MS);
      await settledWithin(queue.close(), CLOSE_WAIT_MS);
      sender.close();
      await settledWithin(metrics.flush(), CLOSE_WAIT_MS);
      connection.disconnect();
      gateConnection.disconnect();
    },
  };
}
