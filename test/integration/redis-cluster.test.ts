// The service's Redis-facing pieces on a private three-node Redis Cluster (REDIS_CLUSTER=true): every key carries
// the one hash tag of REDIS_PREFIX, so multi-key scripts, pipelines and BullMQ work as on one server. The store
// plays no part here, so this file runs the same in every store project.
import { Worker } from 'bullmq';
import type { Cluster } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisCluster, type RunningRedisCluster } from '../../scripts/redis.js';
import { loadConfig, type Config } from '../../src/config/config.js';
import { Lockout } from '../../src/redis/lockout.js';
import { createRateLimiter } from '../../src/redis/token-bucket.js';
import { createLogger } from '../../src/logger.js';
import { createMetricsRecorder, sharedMetrics } from '../../src/metrics/metrics.recorder.js';
import { startProcessHeartbeat } from '../../src/metrics/process-heartbeat.js';
import { registerProcessHeartbeats } from '../../src/metrics/process-heartbeats.metrics.js';
import { createOrderOutcomes, type OrderOutcomes } from '../../src/queue/order-outcomes.js';
import { announced, untilHeard } from '../helpers/order-ends.js';
import {
  createOrderQueue,
  ORDER_QUEUE,
  type OrderJobData,
  type BullOrderQueue,
} from '../../src/queue/order.queue.js';
import { whenReady, withLock } from '../../src/redis/redis-lock.js';
import { createBlockingRedis, createRedis, type RedisClient } from '../../src/redis/redis.js';

const logger = createLogger({ LOG_LEVEL: 'silent', LOG_PRETTY: 'false' }, 'test');
let cluster: RunningRedisCluster;
let config: Config;
let redis: RedisClient;
let queue: BullOrderQueue;
let outcomes: OrderOutcomes;
let stopHeartbeat: () => Promise<void> = () => Promise.resolve();

beforeAll(async () => {
  cluster = await startRedisCluster();
  config = loadConfig({
    REDIS_URL: cluster.url,
    REDIS_CLUSTER: 'true',
    QUEUE_PREFIX: `cluster${process.pid}`,
  });
  redis = createRedis(config, 'test-cmd');
  queue = createOrderQueue(createRedis(config, 'test-queue'), config.REDIS_PREFIX, 1, logger);
  outcomes = createOrderOutcomes(
    () => createBlockingRedis(config, 'test-events'),
    config.REDIS_PREFIX,
    logger,
  );
  await whenReady(redis, 10_000);
});

afterAll(async () => {
  await stopHeartbeat();
  await Promise.allSettled([outcomes?.close(), queue?.close()]);
  redis?.disconnect();
  await cluster?.stop();
});

describe('the service on a Redis Cluster (REDIS_CLUSTER=true)', () => {
  it('connects to the cluster through its seed nodes', () => {
    expect(redis.isCluster).toBe(true);
    expect(config.REDIS_PREFIX).toBe(`{cluster${process.pid}}`);
  });

  it('when a subject fails too often, then the lockout locks it for every process', async () => {
    const policy = { name: 'probe', maxFailures: 3, windowMs: 60_000, lockMs: 600_000 };
    const [web1, web2] = [1, 2].map(() => new Lockout(redis, config.REDIS_PREFIX, policy, logger));
    const t = Date.now();
    expect(await web1!.recordFailure('key-a', t)).toBe(false);
    expect(await web1!.recordFailure('key-a', t + 1)).toBe(false);
    expect(await web1!.recordFailure('key-a', t + 2)).toBe(true);
    expect(await web2!.lockedForMs('key-a', t + 3)).toBeGreaterThan(590_000);
  });

  it('when an access key spends its burst, then the rate limit refuses it with a retry time', async () => {
    const take = createRateLimiter({
      redis,
      prefix: config.REDIS_PREFIX,
      perSecond: 1,
      clock: () => 1_000_000,
    });
    const decisions = [await take('AKburst'), await take('AKburst'), await take('AKburst')];
    expect(decisions).toEqual([
      { allowed: true, retryAfterMs: 0 },
      { allowed: true, retryAfterMs: 0 },
      { allowed: false, retryAfterMs: 1000 },
    ]);
  });

  it('when two clocks reach for the reconciliation lock, then the second is refused while the first holds it', async () => {
    // The key runReconcilePass takes (src/services/reconcile.ts).
    const key = `${config.REDIS_PREFIX}:reconcile:lock`;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = withLock(redis, key, { ttlMs: 5000 }, () => held.then(() => 'first'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await withLock(redis, key, { ttlMs: 5000 }, async () => 'second')).toEqual({ acquired: false });
    release();
    expect(await first).toEqual({ acquired: true, value: 'first' });
    expect(await withLock(redis, key, { ttlMs: 5000 }, async () => 'third')).toEqual({
      acquired: true,
      value: 'third',
    });
  });

  it('when orders are enqueued, then a worker processes each once and the waiting web process hears of it', async () => {
    const orderIds = [101, 102, 103];
    await untilHeard(outcomes, redis, config.REDIS_PREFIX, 1_000_000);
    for (const id of orderIds) await queue.enqueue(id);
    await queue.enqueue(101); // a second enqueue of a waiting order is a no-op
    const started = Date.now();
    const waits = orderIds.map((id) => outcomes.wait(id, 15_000, async () => false));
    const processed: number[] = [];
    const connection = createBlockingRedis(config, 'test-worker');
    const worker = new Worker<OrderJobData>(
      ORDER_QUEUE,
      async (job) => {
        processed.push(job.data.orderId);
        await announced(connection, config.REDIS_PREFIX, job.data.orderId);
      },
      { connection, prefix: config.REDIS_PREFIX, concurrency: 2 },
    );
    // The handler announces the outcome before BullMQ marks the job completed, so the web can hear of an order a
    // moment before its job leaves the active list: the counts are read once the worker says all three are done.
    const completed = new Promise<void>((resolve) => {
      let count = 0;
      worker.on('completed', () => {
        if (++count === orderIds.length) resolve();
      });
    });
    try {
      await Promise.all(waits);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(processed.sort()).toEqual(orderIds);
      await completed;
      expect(await queue.queue.getJobCounts('waiting', 'active', 'failed')).toEqual({
        waiting: 0,
        active: 0,
        failed: 0,
      });
    } finally {
      await worker.close();
      connection.disconnect();
    }
  });

  it('when workers record metrics and beat, then a web process reads them back', async () => {
    const recorder = createMetricsRecorder(redis, config.REDIS_PREFIX, logger);
    await recorder.recordReconcileActions({ requeued: 2, unshipped: 1 });
    await recorder.recordJob({
      queue: ORDER_QUEUE,
      name: 'process-order',
      seconds: 0.02,
      result: 'completed',
    });
    const metrics = sharedMetrics(redis, config.REDIS_PREFIX);
    expect((await metrics.reconcileActions.get()).values).toEqual(
      expect.arrayContaining([
        { labels: { kind: 'requeued' }, value: 2 },
        { labels: { kind: 'unshipped' }, value: 1 },
      ]),
    );
    expect((await metrics.reconcilePasses.get()).values).toEqual([{ labels: {}, value: 1 }]);
    stopHeartbeat = startProcessHeartbeat(redis, config.REDIS_PREFIX, 'worker');
    const registry = new Registry();
    registerProcessHeartbeats(redis, config.REDIS_PREFIX, registry);
    await expect.poll(() => registry.metrics()).toMatch(/^bookorders_processes\{role="worker"\} 1$/m);
  });

  it('then every key the service wrote starts with its hash tag, so all live in one slot', async () => {
    const keys = await allKeys(redis as Cluster);
    for (const family of ['probe', 'ratelimit', 'metrics', ORDER_QUEUE])
      expect(keys.some((key) => key.startsWith(`${config.REDIS_PREFIX}:${family}:`))).toBe(true);
    expect(keys.filter((key) => !key.startsWith(`${config.REDIS_PREFIX}:`))).toEqual([]);
    const slots = await Promise.all(keys.map((key) => redis.cluster('KEYSLOT', key)));
    expect(new Set(slots).size).toBe(1);
  });
});

/** Every key of every master: SCAN answers for one node's slots only. */
async function allKeys(client: Cluster): Promise<string[]> {
  const keys: string[] = [];
  for (const node of client.nodes('master')) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'COUNT', 1000);
      keys.push(...batch);
      cursor = next;
    } while (cursor !== '0');
  }
  return keys;
}
