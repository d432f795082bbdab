import type { JobsOptions, Queue, Telemetry } from 'bullmq';
import { bullmq } from './bullmq.js';
import { groupCalls } from '../group-calls.js';
import type { RedisClient } from '../redis/redis.js';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import { queueTelemetry, tracingOn } from '../tracing/tracing.js';

export const ORDER_QUEUE = 'orders';

/**
 * The closed catalogue of this queue's jobs: each name has one payload schema. A payload of any protocol version
 * (protocol.ts) is read: `v` absent is version 1, and fields a later release adds are ignored.
 */
export const OrderJobs = {
  'process-order': z.object({
    orderId: z.number().int().positive(),
    v: z.number().int().positive().optional(),
  }),
} as const;

export type OrderJobName = keyof typeof OrderJobs;
export type OrderJobData = z.infer<(typeof OrderJobs)['process-order']>;

/**
 * An order's job as this release writes it: protocol version 1 exactly, no version field, since the workers of
 * earlier releases fail a payload with a field they do not know (protocol.ts).
 */
export const orderJobData = (orderId: number): OrderJobData => ({ orderId });

/** Deterministic, so a second enqueue of a waiting or active order is a no-op. */
export const orderJobId = (orderId: number): string => `order-${orderId}`;

/** An order's job as the queue holds it: its BullMQ state ('waiting', 'active', 'completed', ...). */
export interface QueuedJob {
  readonly state: string;
  /** Takes it out of the queue, so that an enqueue under the same id is not ignored. */
  remove(): Promise<void>;
}

/** The port services, jobs and the CLI use; only the composition and tests reach BullMQ's Queue. */
export interface OrderQueue {
  enqueue(orderId: number): Promise<void>;
  /** Enqueues every order in one round trip (BullMQ addBulk); an order whose job exists already is left alone. */
  enqueueMany(orderIds: readonly number[]): Promise<void>;
  /** The order's job, or undefined when the queue holds none. */
  findJob(orderId: number): Promise<QueuedJob | undefined>;
  close(): Promise<void>;
  /** Drops the connection at once: for a short process whose close() may not finish while Redis is away. */
  disconnect(): void;
}

/** The states a scrape counts, and plain reads of Redis to count them with (a scrape's batched reads). */
export type CountedState = 'waiting' | 'prioritized' | 'active' | 'delayed' | 'failed';
export interface CountReads {
  llen(key: string): Promise<number>;
  zcard(key: string): Promise<number>;
}

/** The BullMQ adapter: the port, and the Queue itself for the dashboard and tests. */
export interface BullOrderQueue extends OrderQueue {
  readonly queue: Queue;
  /**
   * How many jobs are in each of these states (what BullMQ's getJobCounts gives), read with plain LLEN and ZCARD
   * of BullMQ's keys through `reads` (its layout: `wait` and `active` are lists, `prioritized`, `delayed` and
   * `failed` sorted sets, as its getCounts script reads them), so that a scrape sends them in its one pipeline
   * instead of a script call of its own.
   */
  countsFrom(reads: CountReads, states: readonly CountedState[]): Promise<Record<string, number>>;
}

/** The producer side; it owns `connection` and closes it with the queue. */
export function createOrderQueue(
  connection: RedisClient,
  prefix: string,
  attempts: number,
  logger: Logger,
): BullOrderQueue {
  const queue = new bullmq.Queue<OrderJobData, void, OrderJobName>(ORDER_QUEUE, {
    connection,
    prefix,
    telemetry: queueTelemetry<Telemetry>(),
  });
  // Without a listener an outage prints unhandled-error stacks; enqueue failures are handled by the caller.
  queue.on('error', (err) => logger.debug({ err: err.message }, 'order queue connection error'));
  const options: JobsOptions = {
    attempts,
    backoff: { type: 'exponential', delay: 500 },
    // Removed on completion so that reconciliation can enqueue the same id again if the order is still QUEUED.
    removeOnComplete: true,
    removeOnFail: { age: 7 * 24 * 3600, count: 10_000 },
  };
  const jobOf = (orderId: number) => ({
    name: 'process-order' as const,
    data: orderJobData(orderId),
    opts: { ...options, jobId: orderJobId(orderId) },
  });
  const addOne = async (orderId: number) => {
    const { name, data, opts } = jobOf(orderId);
    await queue.add(name, data, opts);
  };
  const enqueueMany = async (orderIds: readonly number[]) => {
    if (orderIds.length === 0) return;
    // One order (a lone caller's group): one script call, not addBulk's ioredis pipeline, which copies every
    // script BullMQ defined on the connection (dozens) onto itself: most of the add's CPU.
    if (orderIds.length === 1) await addOne(orderIds[0]!);
    else await queue.addBulk(orderIds.map(jobOf));
  };
  // The orders enqueued in one turn (those accepted together, in one commit) go to Redis in one round trip; a
  // failed round trip is retried order by order, which adds no job twice (a job id is added once).
  const enqueueTogether = groupCalls(
    (orderIds: readonly number[]) => enqueueMany(orderIds).then(() => orderIds.map(() => undefined)),
    Infinity,
  );
  return {
    queue,
    async enqueue(orderId) {
      // With tracing on, each order's job carries the producer span of its own request: one add per order.
      if (tracingOn()) await addOne(orderId);
      else await enqueueTogether(orderId);
    },
    enqueueMany,
    async findJob(orderId) {
      const job = await queue.getJob(orderJobId(orderId));
      if (!job) return undefined;
      return { state: await job.getState(), remove: () => job.remove() };
    },
    async countsFrom(reads, states) {
      const counts = await Promise.all(
        states.map((state) =>
          state === 'waiting' || state === 'active'
            ? reads.llen(queue.keys[state === 'waiting' ? 'wait' : state]!)
            : reads.zcard(queue.keys[state]!),
        ),
      );
      return Object.fromEntries(states.map((state, i) => [state, counts[i]!]));
    },
    async close() {
      await queue.close();
      connection.disconnect();
    },
    disconnect() {
      connection.disconnect();
    },
  };
}
