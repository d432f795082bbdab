import type { RedisClient } from '../redis/redis.js';
import type { Logger } from '../logger.js';
import { ORDER_QUEUE, orderJobId } from './order.queue.js';

export interface OrderOutcomes {
  /**
   * Resolves when the order's job has finished, `isDone` says so (asked every POLL_MS, and once when the signal
   * starts being heard), or the time is up; never rejects. Called right after the order's job was enqueued. With
   * the order's answer as the worker that settled it announced it (its JSON text, unchecked), when it did.
   */
  wait(orderId: number, timeoutMs: number, isDone: () => Promise<boolean>): Promise<string | undefined>;
  close(): Promise<void>;
}

const POLL_MS = 250;
/** How long the signal is still heard after the last waiter left. */
const IDLE_MS = 60_000;
/** How long a job's end heard with no one waiting is kept for a waiter that comes after it. */
const UNCLAIMED_MS = 1_000;

/** The channel on which workers say that an order's job has ended, and waiting web processes hear it. */
export const orderEndsChannel = (prefix: string): string => `${prefix}:${ORDER_QUEUE}:ended`;

/**
 * Says, on `commands` (a pipeline, or a metrics flush's), that the order's job has ended (its attempt settled the
 * order, found it settled, or failed), once what the attempt wrote is committed. With `answer`, the order's answer
 * as JSON text (the attempt that settled it knows it): a waiting web process answers with it; without, it reads
 * the order from the store.
 * A wake-up only: one lost (no web listening, Redis away) leaves the waiter to its poll.
 */
export function announceOrderEnd(
  commands: { publish(channel: string, message: string): unknown },
  prefix: string,
  orderId: number,
  answer?: string,
): void {
  const jobId = orderJobId(orderId);
  commands.publish(orderEndsChannel(prefix), answer === undefined ? jobId : `${jobId} ${answer}`);
}

/**
 * The job id an order's end names: the whole message in protocol version 1 (`order-<id>`), its first word in
 * any later one, which may add words after it (protocol.ts).
 */
export const endedJobOf = (message: string): string => message.split(' ', 1)[0]!;

/** The answer an order's end carries (protocol version 2): what follows the job id when it is a JSON object. */
export function endedAnswerOf(message: string): string | undefined {
  const space = message.indexOf(' ');
  return space > 0 && message[space + 1] === '{' ? message.slice(space + 1) : undefined;
}

/**
 * Waits for workers' word that an order's job ended (announceOrderEnd: one short message per order on a
 * channel, not BullMQ's queue events, of which each job writes several), with a slow poll of the store as a
 * safety net for a message lost while Redis or the subscription was away. The channel is heard only while
 * someone waits (and for IDLE_MS after): a web whose clients all answer `respond-async` hears nothing. Each
 * subscription gets a connection of its own from `connect`, closed with it.
 */
export function createOrderOutcomes(
  connect: () => RedisClient,
  prefix: string,
  logger: Logger,
): OrderOutcomes {
  const channel = orderEndsChannel(prefix);
  /** Per job id, its waiters: how to answer each, and how to ask the store whether it is done. */
  const waiters = new Map<string, Map<(answer?: string) => void, () => void>>();
  // Jobs heard of with no one waiting, by when: a busy event loop can read a job's end before the reply to
  // its enqueue, so its waiter comes after the message. Kept UNCLAIMED_MS, in the order they came, without
  // their answers (every order's end that any web waits for is heard here): such a waiter reads the store.
  const unclaimed = new Map<string, number>();
  const wake = (message: string) => {
    const jobId = endedJobOf(message);
    const set = waiters.get(jobId);
    if (set) {
      const answer = endedAnswerOf(message);
      for (const finish of set.keys()) finish(answer);
    } else unclaimed.set(jobId, Date.now());
    for (const [id, at] of unclaimed) {
      if (at > Date.now() - UNCLAIMED_MS) break;
      unclaimed.delete(id);
    }
  };
  // A message published before the subscription was live (a new one, or one made again after Redis came back)
  // was not heard: the waiters of that moment ask the store once.
  const askAll = () => {
    for (const set of waiters.values()) for (const check of set.values()) check();
  };
  let subscriber: RedisClient | undefined;
  let idle: NodeJS.Timeout | undefined;

  const startHearing = () => {
    clearTimeout(idle);
    idle = undefined;
    if (subscriber) return;
    const connection = connect();
    connection.on('error', (err: Error) =>
      logger.warn({ err: err.message }, 'order outcomes connection error'),
    );
    connection.on('message', (from: string, message: string) => from === channel && wake(message));
    connection.subscribe(channel).then(
      () => {
        askAll();
        // ioredis subscribes again on each reconnection; what was said while the link was down is asked for.
        connection.on('ready', askAll);
      },
      () => undefined,
    );
    subscriber = connection;
  };
  const stopHearing = async () => {
    clearTimeout(idle);
    idle = undefined;
    const stopping = subscriber;
    subscriber = undefined;
    stopping?.disconnect();
  };
  const stopWhenIdle = () => {
    if (waiters.size > 0 || idle) return;
    idle = setTimeout(() => void stopHearing(), IDLE_MS);
    idle.unref();
  };

  return {
    wait(orderId, timeoutMs, isDone) {
      const jobId = orderJobId(orderId);
      startHearing();
      if (unclaimed.delete(jobId)) {
        stopWhenIdle();
        return Promise.resolve(undefined);
      }
      return new Promise<string | undefined>((resolve) => {
        const finish = (answer?: string) => {
          clearTimeout(timer);
          clearInterval(poll);
          const set = waiters.get(jobId);
          set?.delete(finish);
          if (set?.size === 0) waiters.delete(jobId);
          stopWhenIdle();
          resolve(answer);
        };
        const timer = setTimeout(() => finish(), timeoutMs);
        const check = () =>
          void isDone().then(
            (done) => done && finish(),
            () => undefined,
          );
        const poll = setInterval(check, POLL_MS);
        const set = waiters.get(jobId) ?? new Map<(answer?: string) => void, () => void>();
        set.set(finish, check);
        waiters.set(jobId, set);
        // No read of the store now: a job that ended before this waiter came was unclaimed above, or (heard of
        // before the subscription was live) is asked about when it is; the poll covers messages lost to an outage.
      });
    },
    close: stopHearing,
  };
}
