import crypto from 'node:crypto';
import { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { announceOrderEnd, createOrderOutcomes, type OrderOutcomes } from '../../src/queue/order-outcomes.js';
import { announced, untilHeard } from '../helpers/order-ends.js';
import { ORDER_QUEUE, createOrderQueue, type OrderJobData } from '../../src/queue/order.queue.js';
import { createBlockingRedis, createRedis } from '../../src/redis/redis.js';
import { warningsLogger } from '../helpers/test-redis.js';

// The web's wait for an order's job on the run's real Redis, alone: what a waiter hears and when it asks the store.
// The worker here says each job's end as the order worker does (announceOrderEnd), and nothing else.

const config = { REDIS_URL: inject('redisUrl'), REDIS_CLUSTER: false };
const prefix = `t${crypto.randomBytes(5).toString('hex')}`;
const { logger } = warningsLogger();
const queue = createOrderQueue(createRedis(config, 'test-queue'), prefix, 1, logger);
let outcomes: OrderOutcomes;
let worker: Worker<OrderJobData>;
let workerConnection: ReturnType<typeof createBlockingRedis>;

beforeAll(async () => {
  outcomes = createOrderOutcomes(() => createBlockingRedis(config, 'test-events'), prefix, logger);
  workerConnection = createBlockingRedis(config, 'test-worker');
  worker = new Worker<OrderJobData>(
    ORDER_QUEUE,
    async (job) => void announced(workerConnection, prefix, job.data.orderId),
    {
      connection: workerConnection,
      prefix,
      concurrency: 1,
    },
  );
  await worker.waitUntilReady();
  await untilHeard(outcomes, workerConnection, prefix, 1_000_000);
});

afterAll(async () => {
  await Promise.allSettled([worker?.close(), outcomes?.close(), queue.close()]);
  workerConnection?.disconnect();
});

describe('waiting for an order', () => {
  it('when its job ended before the waiter came, then the waiter is answered at once, without asking the store', async () => {
    // The reader runs for an earlier order; the late order's job ends first, so once the earlier order's wait
    // is over, the reader has read the late one's end with no one waiting for it.
    const earlier = outcomes.wait(1, 15_000, async () => false);
    await queue.enqueueMany([2, 1]);
    await earlier;
    let asked = 0;
    await outcomes.wait(2, 15_000, async () => {
      asked += 1;
      return true;
    });

    expect(asked).toBe(0);
  });

  it('when a job ends while no one waits, then a later waiter is answered by the store, not held to its time', async () => {
    // Hearing stops after a minute without waiters, and a message said then is heard by no one: a fresh
    // subscription asks the store for each waiter once it is live, and the poll after.
    await announced(workerConnection, prefix, 3);
    const fresh = createOrderOutcomes(() => createBlockingRedis(config, 'test-events-2'), prefix, logger);
    try {
      const started = Date.now();
      await fresh.wait(3, 15_000, async () => true);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await fresh.close();
    }
  });

  it('when the worker says an order ended, then its waiter wakes without asking the store', async () => {
    let asked = 0;
    const waited = outcomes.wait(4, 15_000, async () => {
      asked += 1;
      return false;
    });
    await queue.enqueueMany([4]);
    await waited;

    expect(asked).toBe(0);
  });

  it("when the end carries the order's answer, then every waiter of that order gets it, and no other", async () => {
    const answer = JSON.stringify({ orderId: 5, listings: [], referenceId: 'po 5 with spaces' });
    const waiters = [5, 5, 6].map((orderId) => outcomes.wait(orderId, 15_000, async () => false));
    const pipeline = workerConnection.pipeline();
    announceOrderEnd(pipeline, prefix, 5, answer);
    announceOrderEnd(pipeline, prefix, 6);
    await pipeline.exec();

    expect(await Promise.all(waiters)).toEqual([answer, answer, undefined]);
  });
});
