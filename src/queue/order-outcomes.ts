import { QueueEvents } from 'bullmq';
import type { RedisClient } from '../redis/redis.js';
import type { Logger } from '../logger.js';
import { ORDER_QUEUE, orderJobId } from './order.queue.js';

export interface OrderOutcomes {
  /** Resolves when the order's job has finished, `isDone` says so, or the time is up; never rejects. */
  wait(orderId: number, timeoutMs: number, isDone: () => Promise<boolean>): Promise<void>;
  close(): Promise<void>;
}

const POLL_MS = 250;

/**
 * Waits for workers' outcomes through BullMQ's queue events, with a slow poll of the store as a safety net
 * for events missed while Redis was away. It owns `connection` and closes it.
 */
export function createOrderOutcomes(connection: RedisClient, prefix: string, logger: Logger): OrderOutcomes {
  const events = new QueueEvents(ORDER_QUEUE, { connection, prefix });
  const waiters = new Map<string, Set<() => void>>();
  const wake = ({ jobId }: { jobId: string }) => {
    for (const resolve of waiters.get(jobId) ?? []) resolve();
  };
  events.on('completed', wake);
  events.on('failed', wake);
  events.on('error', (err) => logger.warn({ err: err.message }, 'queue events connection error'));
  connection.on('error', () => undefined);

  return {
    wait(orderId, timeoutMs, isDone) {
      const jobId = orderJobId(orderId);
      return new Promise<void>((resolve) => {
        const finish = () => {
          clearTimeout(timer);
          clearInterval(poll);
          const set = waiters.get(jobId);
          set?.delete(finish);
          if (set?.size === 0) waiters.delete(jobId);
          resolve();
        };
        const timer = setTimeout(finish, timeoutMs);
        const check = () =>
          void isDone().then(
            (done) => done && finish(),
            () => undefined,
          );
        const poll = setInterval(check, POLL_MS);
        const set = waiters.get(jobId) ?? new Set();
        set.add(finish);
        waiters.set(jobId, set);
        check();
      });
    },
    async close() {
      await events.close();
      connection.disconnect();
    },
  };
}
