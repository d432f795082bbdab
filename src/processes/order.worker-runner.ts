import { bullmq } from '../queue/bullmq.js';
import type { Deps } from '../deps.js';
import { attemptOrder, failOrder } from '../services/process-order.js';
import { isStoreUnavailable } from '../store/store-errors.js';
import { announceOrderEnd } from '../queue/order-outcomes.js';
import { toOrderResponse } from '../services/order-view.js';
import type { OrderWithItems } from '../store/port/store.port.js';
import { ORDER_QUEUE, OrderJobs, type OrderJobData } from '../queue/order.queue.js';
import { createMetricsRecorder } from '../metrics/metrics.recorder.js';
import { createBlockingRedis } from '../redis/redis.js';
import { withOrder } from '../tracing/tracing.js';
import { CLOSE_WAIT_MS, JOBS_WAIT_MS, settledWithin } from '../bounded-stop.js';
import { jobProcessor } from './job-processor.js';
import { workerOptions } from './worker-options.js';

/** How long a job that found the store away waits before it tries again. */
const STORE_RETRY_MS = 1000;

/** Starts a BullMQ worker for the orders queue; resolves with a function that stops it cleanly. */
export async function startOrderWorker(deps: Deps) {
  const { config, logger } = deps;
  const connection = createBlockingRedis(config, `${config.QUEUE_PREFIX}-worker`);
  // On the connection that then marks each job finished: while other jobs run, the word that an order ended goes
  // in the same write as that mark (see recordJob and announceEnd).
  const metrics = createMetricsRecorder(connection, config.REDIS_PREFIX, logger);
  const processDeps = { ...deps, metrics, maxAttempts: config.MAX_PROCESS_ATTEMPTS };
  /** This worker's jobs between the start and the end of their attempt. */
  let working = 0;
  // A job whose attempt ended with no other attempt running says its end at once: sent with its mark that it is
  // finished, Redis would hand the word to the waiting web only after running the mark's script. While others
  // run, it goes with the job's mark and whatever the connection sends in that turn: one write for all of them.
  const announceEnd = (orderId: number, settled?: OrderWithItems) => {
    const say = (commands: Parameters<typeof announceOrderEnd>[0]) =>
      announceOrderEnd(commands, config.REDIS_PREFIX, orderId, settled && answerOf(settled));
    if (working > 0) return metrics.sendAlong(say);
    say({
      // A wake-up only: one lost leaves the waiter to its poll of the store.
      publish: (channel, message) =>
        connection.publish(channel, message).catch((err: Error) => {
          logger.debug({ err: err.message, orderId }, "order's end not said: redis unavailable");
        }),
    });
  };
  const worker = new bullmq.Worker<OrderJobData>(
    ORDER_QUEUE,
    jobProcessor({
      queue: ORDER_QUEUE,
      schema: OrderJobs['process-order'],
      metrics,
      async work({ orderId }, job) {
        working += 1;
        const { outcome, settled } = await withOrder(orderId, () =>
          // Every line the attempt logs names its order itself; the child adds the job.
          attemptOrder({ ...processDeps, logger: logger.child({ jobId: job.id }) }, orderId),
        ).finally(() => (working -= 1));
        if (outcome === 'missing') throw new bullmq.UnrecoverableError(`order ${orderId} does not exist`);
        // What the attempt wrote is committed: a web waiting for the order answers now, while the job ends.
        announceEnd(orderId, settled ?? undefined);
        // Not awaited: summed into the recorder's next publish, with the job's own duration.
        if (settled) void metrics.recordOrderSettled(settled.items.map((item) => item.status));
        else if (outcome === 'failed') await countOutcome(processDeps, orderId);
        return 'completed';
      },
      // The store is away (restarting, unreachable): the job waits for it without using up one of its
      // attempts, so that an outage fails no order. What the attempt wrote before is guarded by the phase.
      retryLater: {
        when: isStoreUnavailable,
        afterMs: STORE_RETRY_MS,
        logger,
        message: 'store unavailable; job delayed',
      },
    }),
    workerOptions(config, connection, {
      concurrency: config.WORKER_CONCURRENCY,
      // Jobs take milliseconds; short locks let a surviving worker take over a dead one's jobs within seconds.
      lockDuration: 10_000,
      maxStalledCount: 2,
    }),
  );
  worker.on('error', (err) => logger.error({ err }, 'worker error'));
  // Orders being given up on after a job's last attempt: stop() waits for them before the store closes.
  const givingUp = new Set<Promise<void>>();
  worker.on('failed', (job, err) => {
    logger.warn({ jobId: job?.id, attemptsMade: job?.attemptsMade, err: err.message }, 'job failed');
    const orderId = (job?.data as OrderJobData | undefined)?.orderId;
    if (job && orderId && job.attemptsMade >= (job.opts.attempts ?? 1)) {
      // No lease is asked for: this job's own last attempt holds it. A stalled twin still paying cannot
      // charge: giving up releases the payment with a versioned target that also declines a later authorisation.
      const done = failOrder(processDeps, orderId)
        .then(() => countOutcome(processDeps, orderId))
        .catch((e: unknown) => logger.error({ err: e, orderId }, 'could not fail order'))
        .finally(() => {
          givingUp.delete(done);
          announceEnd(orderId);
        });
      givingUp.add(done);
    } else if (orderId) {
      // Also a job failed for stalling too often: BullMQ fails it in the worker that takes it next, here.
      announceEnd(orderId);
    }
  });
  await worker.waitUntilReady();
  return {
    worker,
    async stop() {
      // close() waits for the jobs in flight to finish; nothing is handed back half-done unless Redis cannot be
      // reached to mark them finished (bounded-stop.ts).
      await settledWithin(worker.close(), JOBS_WAIT_MS);
      await settledWithin(
        Promise.all(givingUp).then(() => metrics.flush()),
        CLOSE_WAIT_MS,
      );
      connection.disconnect();
    },
  };
}

/** Most items of an order whose answer its end carries; a larger one is read by the web that waits for it. */
const MAX_ANNOUNCED_ITEMS = 50;

/**
 * The answer to the order's placing, as the web would build it from the store (toOrderResponse), for the
 * announcement of its end; none for an order of more than MAX_ANNOUNCED_ITEMS items, so that every message stays
 * small (each web hearing the channel receives it).
 */
function answerOf({ order, items }: OrderWithItems): string | undefined {
  if (items.length > MAX_ANNOUNCED_ITEMS) return undefined;
  return JSON.stringify(toOrderResponse(order, items, false));
}

/** Counts a settled order's outcome; only the attempt that settled it calls this, so each order counts once. */
async function countOutcome(deps: Pick<Deps, 'store' | 'metrics'>, orderId: number): Promise<void> {
  const stored = await deps.store.orders.get(orderId);
  if (stored) await deps.metrics.recordOrderSettled(stored.items.map((item) => item.status));
}
