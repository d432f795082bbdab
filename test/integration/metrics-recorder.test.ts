import crypto from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort } from '../../scripts/redis.js';
import {
  createMetricsRecorder,
  sharedMetrics,
  type MetricsRecorder,
} from '../../src/metrics/metrics.recorder.js';
import { createRedis, type RedisClient } from '../../src/redis/redis.js';
import { connectTestRedis, warningsLogger } from '../helpers/test-redis.js';

// The recorder alone on the run's real Redis: what a worker's metrics cost in round trips (none per job: they are
// summed and published on an interval), and that nothing recorded is lost or counted twice.
// test/integration/metrics.test.ts sees the same series through /metrics.

let redis: RedisClient;
const prefix = `t${crypto.randomBytes(5).toString('hex')}`;
const { logger, warnings } = warningsLogger();

beforeAll(async () => {
  redis = await connectTestRedis('test-metrics');
});
afterEach(async () => {
  vi.restoreAllMocks();
  warnings.length = 0;
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
});
afterAll(() => redis.disconnect());

/** The writes the recorder sends (its commands queued while the socket is corked), each as its number of commands. */
function countPipelines() {
  const call = vi.spyOn(redis as Redis, 'call');
  const uncork = vi.spyOn((redis as Redis).stream, 'uncork');
  return () => {
    const ends = uncork.mock.invocationCallOrder;
    const calls = call.mock.invocationCallOrder;
    return ends.map((end, i) => calls.filter((at) => at < end && at > (ends[i - 1] ?? 0)).length);
  };
}

/** What the order worker records for one job: its outcome without waiting, then its duration. */
async function orderJob(recorder: MetricsRecorder, itemStatuses: number[], seconds: number) {
  void recorder.recordOrderSettled(itemStatuses);
  await recorder.recordJob({ queue: 'orders', name: 'process-order', seconds, result: 'completed' });
}

describe('the metrics recorder', () => {
  it('when two order jobs finish before a publish, then their four calls reach Redis in one write of summed fields', async () => {
    const recorder = createMetricsRecorder(redis, prefix, logger, 60_000);
    const pipelines = countPipelines();
    await Promise.all([orderJob(recorder, [5, 5], 0.125), orderJob(recorder, [5], 0.25)]);
    await new Promise((resolve) => setImmediate(resolve));
    // Summed in the process until the publish: nothing is sent per job.
    expect(pipelines()).toEqual([]);
    await recorder.flush();

    // One field each: the outcome, the items' status, and the duration's bucket and sum (no count: see below).
    expect(pipelines()).toEqual([4]);
    const series = '[["job","process-order"],["queue","orders"],["result","completed"]]';
    expect(await redis.hgetall(`${prefix}:metrics:bookorders_job_duration_seconds`)).toEqual({
      [`b|0.25|${series}`]: '2',
      [`s|${series}`]: '0.375',
    });
    // The count a scrape shows is the sum of the buckets.
    const { values } = await sharedMetrics(redis, prefix).jobDuration.get();
    expect(values.find((v) => v.metricName === 'bookorders_job_duration_seconds_count')?.value).toBe(2);
    const metrics = sharedMetrics(redis, prefix);
    expect((await metrics.ordersSettled.get()).values).toEqual([
      { labels: { outcome: 'ordered' }, value: 2 },
    ]);
    expect((await metrics.itemsSettled.get()).values).toEqual([{ labels: { status: '5' }, value: 3 }]);
    expect(warnings).toEqual([]);
  });

  it('when the publish interval passes, then what was recorded is in Redis without a flush', async () => {
    const recorder = createMetricsRecorder(redis, prefix, logger, 50);
    const started = Date.now();
    await recorder.recordWebhookAttempt('delivered');

    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    const attempts = await sharedMetrics(redis, prefix).webhookAttempts.get();
    expect(attempts.values).toEqual([{ labels: { outcome: 'delivered' }, value: 1 }]);
  });

  it("when a job sends a write along, then it and the job's end reach Redis in one write, in that order, and its metrics wait for the publish", async () => {
    const recorder = createMetricsRecorder(redis, prefix, logger, 60_000);
    const pipelines = countPipelines();
    recorder.sendAlong((commands) => commands.hincrby(`${prefix}:along`, 'said', 1));
    await orderJob(recorder, [5], 0.125);
    // recordJob resolved once the write sent along was written: what this connection sends next (BullMQ's
    // mark that the job is finished) joins the same write, after it.
    const next = redis.call('hget', `${prefix}:along`, 'said');

    expect(await next).toBe('1');
    expect(pipelines()).toEqual([2]);
    expect(await redis.exists(`${prefix}:metrics:bookorders_job_duration_seconds`)).toBe(0);
    await recorder.flush();
    expect(pipelines()).toEqual([2, 4]);
    expect(warnings).toEqual([]);
  });

  it('when a job is recorded with nothing sent along, then it resolves at once, before anything is sent', async () => {
    const recorder = createMetricsRecorder(redis, prefix, logger, 60_000);
    const pipelines = countPipelines();
    await recorder.recordJob({ queue: 'orders', name: 'process-order', seconds: 0.01, result: 'completed' });

    expect(pipelines()).toEqual([]);
    await recorder.flush();
    const series = '[["job","process-order"],["queue","orders"],["result","completed"]]';
    expect(await redis.hget(`${prefix}:metrics:bookorders_job_duration_seconds`, `b|0.01|${series}`)).toBe(
      '1',
    );
  });

  it('when samples come while a flush is in flight, then they wait for it and share the next one', async () => {
    const recorder = createMetricsRecorder(redis, prefix, logger, 60_000);
    const pipelines = countPipelines();
    const done: string[] = [];
    const first = recorder.recordWebhookAttempt('delivered').then(() => done.push('first'));
    void recorder.flush();
    // The flush was scheduled first, so on this turn it has sent its commands and waits for the reply.
    await new Promise((resolve) => setImmediate(resolve));
    expect(pipelines()).toEqual([1]);
    const later = [1, 2].map(() => recorder.recordWebhookAttempt('delivered').then(() => done.push('later')));
    await recorder.flush();
    await Promise.all([first, ...later]);

    expect(done).toEqual(['first', 'later', 'later']);
    expect(pipelines()).toEqual([1, 1]);
    const attempts = await sharedMetrics(redis, prefix).webhookAttempts.get();
    expect(attempts.values).toEqual([{ labels: { outcome: 'delivered' }, value: 3 }]);
  });

  it('when calls are not awaited, then flush() waits until they are in Redis', async () => {
    const recorder = createMetricsRecorder(redis, prefix, logger);
    await recorder.flush();
    void recorder.recordReconcileActions({ requeued: 2 });
    void recorder.recordOrderSettled([19]);
    await recorder.flush();

    const metrics = sharedMetrics(redis, prefix);
    expect((await metrics.reconcileActions.get()).values).toEqual([
      { labels: { kind: 'requeued' }, value: 2 },
    ]);
    expect((await metrics.ordersSettled.get()).values).toEqual([
      { labels: { outcome: 'declined' }, value: 1 },
    ]);
  });

  it('when Redis is unavailable, then the calls of one flush resolve and it is logged once', async () => {
    const away = createRedis(
      { REDIS_URL: `redis://127.0.0.1:${await freePort()}`, REDIS_CLUSTER: false },
      'away',
    );
    away.on('error', () => {});
    try {
      const recorder = createMetricsRecorder(away, prefix, logger);
      await Promise.all([orderJob(recorder, [5], 0.01), orderJob(recorder, [19], 0.02)]);
      await recorder.flush();
      expect(warnings).toEqual(['metrics not recorded: redis unavailable']);
    } finally {
      away.disconnect();
    }
  });
});
