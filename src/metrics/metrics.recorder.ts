import { Cluster } from 'ioredis';
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
 * sends once the job's wait for its metrics is over: one write, and one read of the replies, instead of two).
 * Not an ioredis pipeline: each of those copies every script defined on the connection (BullMQ's dozens, on a
 * worker's) onto itself, most of a job's metrics' CPU. A cluster, whose commands go to the node of their slot,
 * gets a pipeline.
 */
function sendTogether(redis: RedisClient, commands: readonly QueuedCommand[]): Promise<unknown> {
  if (redis instanceof Cluster) {
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
   * On one Redis server, resolves once the sample is written to the recorder's connection: Redis runs it before
   * anything sent on that connection later (a worker sharing it then marks the job finished, in the same write to
   * the socket when it does so before the promise jobs of that turn have all run). On a cluster, whose
   * nodes each run their own keys, it resolves once Redis has answered, like the other calls.
   */
  recordJob(job: JobRecord): Promise<void>;
  /** Counts one settled order by outcome and its items by status. */
  recordOrderSettled(itemStatuses: readonly number[]): Promise<void>;
  /** Counts one reconciliation pass and what it changed, e.g. `{ requeued: 2, unshipped: 1 }`. */
  recordReconcileActions(counts: Readonly<Record<string, number>>): Promise<void>;
  /** Counts one webhook delivery attempt by its outcome (not a deferral: no attempt was made). */
  recordWebhookAttempt(outcome: string): Promise<void>;
  /**
   * Queues a write of another concern (a worker's word that an order's job ended) on the next flush's commands:
   * one write to Redis instead of two, on the turn after. Not awaited, its reply not read; lost only as the
   * flush's samples are (logged).
   */
  sendAlong(write: (commands: FlushCommands) => void): void;
  /** Resolves once everything recorded before it has been sent (or logged as lost): called before Redis closes. */
  flush(): Promise<void>;
}

/**
 * Each call's promise resolves once the flush that carries it has ended. Calls share flushes (see groupedSends),
 * so a worker whose jobs finish together sends their metrics in one write, not two per job.
 */
export function createMetricsRecorder(redis: RedisClient, prefix: string, logger: Logger): MetricsRecorder {
  const metrics = sharedMetrics(redis, prefix);
  const { add, batchToFill, flush } = groupedSends(redis, logger);
  const inOrder = !(redis instanceof Cluster);
  return {
    recordJob: ({ queue, name, seconds, result }) =>
      add((m) => metrics.jobDuration.observe(m, { queue, job: name, result }, seconds), inOrder),
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
  increments: MetricIncrements;
  /** Writes of other concerns sent with the same commands (sendAlong). */
  along: ((commands: FlushCommands) => void)[];
  /** Its pipeline has been handed to the connection (or failed to be). */
  written: Deferred;
  /** Redis has answered it (or it was logged as lost). */
  sent: Deferred;
}

/**
 * Group commits of increments: what is added in one event-loop turn, or while a flush is in flight, is summed
 * into the next flush, sent in one write on the turn after; one flush is in flight at a time.
 */
function groupedSends(redis: RedisClient, logger: Logger) {
  let queued: Batch | undefined;
  let inFlight: Batch | undefined;

  const send = async ({ increments, along, written }: Batch) => {
    try {
      const commands = new CommandList();
      increments.appendTo(commands);
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
  return {
    /** Resolves once the batch carrying the call is answered, or only written with `untilWritten`. */
    add(fill: (increments: MetricIncrements) => void, untilWritten = false): Promise<void> {
      const batch = batchToFill();
      fill(batch.increments);
      return (untilWritten ? batch.written : batch.sent).promise;
    },
    batchToFill,
    async flush(): Promise<void> {
      for (let last = queued ?? inFlight; last; last = queued ?? inFlight) await last.sent.promise;
    },
  };
}

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}

function newBatch(): Batch {
  return { increments: new MetricIncrements(), along: [], written: deferred(), sent: deferred() };
}

function deferred(): Deferred {
  let resolve = () => {};
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
