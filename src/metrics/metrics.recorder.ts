import { ioredis } from '../redis/ioredis.js';
import type { RedisClient } from '../redis/redis.js';
import { ItemStatus } from '../domain/item-status.js';
import type { Logger } from '../logger.js';
import { MetricIncrements } from './metric-increments.js';
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

/** The commands a flush sends together; a write sent along (sendAlong) queues its own on them. */
export interface FlushCommands {
  hincrby(key: string, field: string, amount: number): void;
  hincrbyfloat(key: string, field: string, amount: number): void;
  publish(channel: string, message: string): void;
}

type QueuedCommand = [name: string, ...args: (string | number)[]];

class CommandList implements FlushCommands {
  readonly queued: QueuedCommand[] = [];
  hincrby(key: string, field: string, amount: number): void {
    this.queued.push(['hincrby', key, field, amount]);
  }
  hincrbyfloat(key: string, field: string, amount: number): void {
    this.queued.push(['hincrbyfloat', key, field, amount]);
  }
  publish(channel: string, message: string): void {
    this.queued.push(['publish', channel, message]);
  }
}

/**
 * Sends `commands` on `redis` in one write to its socket, their replies read as they come; rejects with the first
 * error. The socket stays corked until the promise jobs this turn has queued have run: what they send on the
 * connection goes in the same write, after these commands (a worker's mark that the job is finished, which BullMQ
 * sends once recordJob's wait for the writes sent along is over: one write, and one read of the replies, instead
 * of two).
 * Not an ioredis pipeline: each of those copies every script defined on the connection (BullMQ's dozens, on a
 * worker's) onto itself, most of a job's metrics' CPU. A cluster, whose commands go to the node of their slot,
 * gets a pipeline.
 */
function sendTogether(redis: RedisClient, commands: readonly QueuedCommand[]): Promise<unknown> {
  if (redis instanceof ioredis.Cluster) {
    const pipeline = redis.pipeline();
    for (const [name, ...args] of commands) pipeline.call(name, ...args);
    return pipeline.exec().then((replies) => {
      const failed = replies?.find(([err]) => err)?.[0];
      if (failed) throw failed;
    });
  }
  const stream = redis.status === 'ready' ? redis.stream : undefined;
  stream?.cork();
  try {
    return Promise.all(commands.map(([name, ...args]) => redis.call(name, ...args)));
  } finally {
    // Called from a promise job (groupedSends' run), a tick runs once the queue of promise jobs is empty.
    if (stream) process.nextTick(() => stream.uncork());
  }
}

export interface JobRecord {
  queue: string;
  name: string;
  seconds: number;
  result: 'completed' | 'failed';
}

/** What any process adds to the deployment's metrics; it never throws: a lost sample is only logged. */
export interface MetricsRecorder {
  /**
   * Adds the job's duration to what the next publish sends (see createMetricsRecorder); resolves at once, or, on
   * one Redis server, once the writes sent along before it (sendAlong) are written to the recorder's connection:
   * a worker sharing it then marks the job finished in the same write to the socket, after them.
   */
  recordJob(job: JobRecord): Promise<void>;
  /** Counts one settled order by outcome and its items by status. */
  recordOrderSettled(itemStatuses: readonly number[]): Promise<void>;
  /** Counts one reconciliation pass and what it changed, e.g. `{ requeued: 2, unshipped: 1 }`. */
  recordReconcileActions(counts: Readonly<Record<string, number>>): Promise<void>;
  /** Counts one webhook delivery attempt by its outcome (not a deferral: no attempt was made). */
  recordWebhookAttempt(outcome: string): Promise<void>;
  /**
   * Sends a write of another concern (a worker's word that an order's job ended) on the turn after, in the same
   * write to Redis as what the connection sends in that turn. Not awaited, its reply not read; lost only as a
   * flush's samples are (logged).
   */
  sendAlong(write: (commands: FlushCommands) => void): void;
  /** Sends what was recorded and not published yet now; resolves once it is in Redis (or logged as lost). */
  flush(): Promise<void>;
}

/** How often what a process recorded is published to Redis: a scrape sees a sample at most this late. */
export const PUBLISH_EVERY_MS = 500;

/**
 * The samples are summed in this process and published every `publishEveryMs` (one HINCRBY per series that
 * changed, however many jobs added to it), and by flush(): not one write per job. Each call but recordJob
 * resolves once the publish that carries it is answered.
 */
export function createMetricsRecorder(
  redis: RedisClient,
  prefix: string,
  logger: Logger,
  publishEveryMs = PUBLISH_EVERY_MS,
): MetricsRecorder {
  const metrics = sharedMetrics(redis, prefix);
  const { add, alongWritten, batchToFill, flush } = groupedSends(redis, logger, publishEveryMs);
  const inOrder = !(redis instanceof ioredis.Cluster);
  return {
    recordJob: ({ queue, name, seconds, result }) => {
      void add((m) => metrics.jobDuration.observe(m, { queue, job: name, result }, seconds));
      return inOrder ? alongWritten() : Promise.resolve();
    },
    recordOrderSettled: (itemStatuses) =>
      add((m) => {
        metrics.ordersSettled.inc(m, { outcome: outcomeOf(itemStatuses) });
        const byStatus = new Map<number, number>();
        for (const status of itemStatuses) byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
        for (const [status, n] of byStatus) metrics.itemsSettled.inc(m, { status: String(status) }, n);
      }),
    recordReconcileActions: (counts) =>
      add((m) => {
        metrics.reconcilePasses.inc(m, {});
        for (const [kind, n] of Object.entries(counts)) {
          if (Number.isInteger(n) && n > 0) metrics.reconcileActions.inc(m, { kind }, n);
        }
      }),
    recordWebhookAttempt: (outcome) => add((m) => metrics.webhookAttempts.inc(m, { outcome })),
    sendAlong: (write) => void batchToFill().along.push(write),
    flush,
  };
}

interface Batch {
  /** The samples of the publishes it carries. */
  increments: MetricIncrements[];
  /** Writes of other concerns sent with the same commands (sendAlong). */
  along: ((commands: FlushCommands) => void)[];
  /** Its commands have been handed to the connection (or failed to be). */
  written: Deferred;
  /** Redis has answered it (or it was logged as lost). */
  sent: Deferred;
}

/**
 * Flushes to Redis, one in flight at a time: what is queued in one event-loop turn, or while a flush is in flight,
 * goes in the next one, sent in one write on the turn after. Samples are summed apart and queued every
 * `publishEveryMs` (or by flush()); writes sent along are queued at once.
 */
function groupedSends(redis: RedisClient, logger: Logger, publishEveryMs: number) {
  let queued: Batch | undefined;
  let inFlight: Batch | undefined;
  let pending = new MetricIncrements();
  let pendingSent = deferred();
  let timer: NodeJS.Timeout | undefined;

  const send = async ({ increments, along, written }: Batch) => {
    try {
      const commands = new CommandList();
      for (const samples of increments) samples.appendTo(commands);
      for (const write of along) write(commands);
      const replies = sendTogether(redis, commands.queued);
      written.resolve();
      // Sent while Redis is away, the commands fail one by one: the first error is logged, once.
      await replies;
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'metrics not recorded: redis unavailable');
    } finally {
      written.resolve();
    }
  };
  const run = async () => {
    while (queued) {
      await new Promise((resolve) => setImmediate(resolve));
      const batch: Batch = queued;
      queued = undefined;
      inFlight = batch;
      await send(batch);
      inFlight = undefined;
      batch.sent.resolve();
    }
  };
  /** The batch that the next flush sends; that flush is on its way (it starts on a later turn). */
  const batchToFill = (): Batch => {
    const running = queued ?? inFlight;
    queued ??= newBatch();
    if (!running) void run();
    return queued;
  };
  /** Queues the samples summed since the last publish on the next flush. */
  const publish = () => {
    clearTimeout(timer);
    timer = undefined;
    const samples = pending;
    const sent = pendingSent;
    pending = new MetricIncrements();
    pendingSent = deferred();
    if (samples.isEmpty) return sent.resolve();
    const batch = batchToFill();
    batch.increments.push(samples);
    void batch.sent.promise.then(sent.resolve);
  };
  return {
    /** Sums the samples into the next publish; resolves once the flush carrying it is answered. */
    add(fill: (increments: MetricIncrements) => void): Promise<void> {
      fill(pending);
      if (!timer) {
        timer = setTimeout(publish, publishEveryMs);
        // A process that stops flushes first (flush()): the timer alone keeps none running.
        timer.unref();
      }
      return pendingSent.promise;
    },
    /** Resolves once the writes queued so far are written to the connection (at once when there are none). */
    alongWritten: (): Promise<void> => queued?.written.promise ?? Promise.resolve(),
    batchToFill,
    async flush(): Promise<void> {
      publish();
      for (let last = queued ?? inFlight; last; last = queued ?? inFlight) await last.sent.promise;
    },
  };
}

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}

function newBatch(): Batch {
  return { increments: [], along: [], written: deferred(), sent: deferred() };
}

function deferred(): Deferred {
  let resolve = () => {};
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
