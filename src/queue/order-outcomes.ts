import { QueueEvents } from 'bullmq';
import type { RedisClient } from '../redis/redis.js';
import type { Logger } from '../logger.js';
import { ORDER_QUEUE, orderJobId } from './order.queue.js';

export interface OrderOutcomes {
  /**
   * Resolves when the order's job has finished, `isDone` says so (asked every POLL_MS, not at once), or the
   * time is up; never rejects. Called right after the order's job was enqueued.
   */
  wait(orderId: number, timeoutMs: number, isDone: () => Promise<boolean>): Promise<void>;
  close(): Promise<void>;
}

const POLL_MS = 250;
/** How long the queue's events are still read after the last waiter left. */
const IDLE_MS = 60_000;
/**
 * How far back a reader that starts for a waiter reads the queue's events (stream ids are Redis's clock, in
 * ms): a job that finished between its enqueue and the reader's start is heard of too.
 */
const REPLAY_MS = 1_000;

/**
 * Waits for workers' outcomes through BullMQ's queue events, with a slow poll of the store as a safety net
 * for events missed while Redis was away. The events are read only while someone waits (and for IDLE_MS
 * after): a web whose clients all answer `respond-async` reads none of the several events each job writes.
 * Each reader gets a connection of its own from `connect`, closed with it.
 */
export function createOrderOutcomes(
  connect: () => RedisClient,
  prefix: string,
  logger: Logger,
): OrderOutcomes {
  const waiters = new Map<string, Set<() => void>>();
  // Jobs heard of with no one waiting, by when: a busy event loop can read a job's end before the reply to
  // its enqueue, so its waiter comes after the event. Kept REPLAY_MS, in the order they came.
  const unclaimed = new Map<string, number>();
  const wake = ({ jobId }: { jobId: string }) => {
    const set = waiters.get(jobId);
    if (set) for (const resolve of set) resolve();
    else unclaimed.set(jobId, Date.now());
    for (const [id, at] of unclaimed) {
      if (at > Date.now() - REPLAY_MS) break;
      unclaimed.delete(id);
    }
  };
  let reader: { events: QueueEvents; connection: RedisClient } | undefined;
  let idle: NodeJS.Timeout | undefined;

  const startReading = () => {
    clearTimeout(idle);
    idle = undefined;
    if (reader) return;
    const connection = connect();
    connection.on('error', () => undefined);
    const events = new QueueEvents(ORDER_QUEUE, {
      connection,
      prefix,
      lastEventId: `${Date.now() - REPLAY_MS}-0`,
    });
    events.on('completed', wake);
    events.on('failed', wake);
    events.on('error', (err) => logger.warn({ err: err.message }, 'queue events connection error'));
    reader = { events, connection };
  };
  const stopReading = async () => {
    clearTimeout(idle);
    idle = undefined;
    const stopping = reader;
    reader = undefined;
    if (!stopping) return;
    await stopping.events.close();
    stopping.connection.disconnect();
  };
  const stopWhenIdle = () => {
    if (waiters.size > 0 || idle) return;
    idle = setTimeout(() => void stopReading().catch(() => undefined), IDLE_MS);
    idle.unref();
  };

  return {
    wait(orderId, timeoutMs, isDone) {
      const jobId = orderJobId(orderId);
      startReading();
      if (unclaimed.delete(jobId)) {
        stopWhenIdle();
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        const finish = () => {
          clearTimeout(timer);
          clearInterval(poll);
          const set = waiters.get(jobId);
          set?.delete(finish);
          if (set?.size === 0) waiters.delete(jobId);
          stopWhenIdle();
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
        // No read of the store now: a job that ended before this waiter came was unclaimed above, or is still to
        // be read by a new reader (it replays REPLAY_MS); the poll covers events lost to a Redis outage.
      });
    },
    close: stopReading,
  };
}
