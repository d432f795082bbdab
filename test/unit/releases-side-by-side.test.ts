// Releases side by side: what a process says of its release in its heartbeat, how a process about to migrate
// judges the live ones, and the jobs and messages both releases read.
import { UnrecoverableError, type Job } from 'bullmq';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '../../src/config/config.js';
import {
  migrationGate,
  OlderProcessesRunningError,
  processesBrokenBy,
} from '../../src/metrics/migration-gate.js';
import {
  keyOf,
  liveProcesses,
  STALE_AFTER_MS,
  startProcessHeartbeat,
} from '../../src/metrics/process-heartbeat.js';
import { jobProcessor } from '../../src/processes/job-processor.js';
import { announceOrderEnd, endedAnswerOf, endedJobOf } from '../../src/queue/order-outcomes.js';
import { OrderJobs, orderJobData } from '../../src/queue/order.queue.js';
import { PROTOCOL } from '../../src/queue/protocol.js';
import { WebhookJobs } from '../../src/queue/webhook.queue.js';
import type { RedisClient } from '../../src/redis/redis.js';
import type { PendingMigration } from '../../src/store/port/migrations.port.js';

const NOW = Date.parse('2026-12-06T12:00:00.000Z');

// The shapes the release of 2026-11-27 and today's main write into the heartbeats' hash.
const beatOfRelease = (at: number) =>
  JSON.stringify({ rss: 1, heapUsed: 1, cpuSeconds: 1, startedAt: 0, at });
const beatOfMain = (at: number) => JSON.stringify({ ...JSON.parse(beatOfRelease(at)), servers: {} });
const beatOfThis = (at: number, schema: number) =>
  JSON.stringify({ ...JSON.parse(beatOfMain(at)), release: { store: 'sqlite', schema, protocol: 1 } });

const itemCount: PendingMigration = { version: 14, name: 'item count', besideOlder: false };
const eventStates: PendingMigration = { version: 16, name: 'event item states', besideOlder: true };

/** A Redis that answers the gate's reads; `TIME` is Redis's clock, which the host's may be far from. */
function fakeRedis(hash: Record<string, string>, redisNow: number) {
  const calls: string[] = [];
  const redis = {
    status: 'ready',
    on: () => redis,
    hgetall: async (key: string) => (calls.push(`hgetall ${key}`), hash),
    time: async () => [String(Math.floor(redisNow / 1000)), String((redisNow % 1000) * 1000)],
    disconnect: () => void calls.push('disconnect'),
  };
  return { redis: redis as unknown as RedisClient, calls };
}

const config = loadConfig({ QUEUE_PREFIX: 'bo-test' });

describe('a heartbeat', () => {
  it("carries the process's release: its store, the highest migration it knows, its protocol", async () => {
    const written: [string, string, string][] = [];
    const redis = {
      status: 'ready',
      hset: async (...args: [string, string, string]) => void written.push(args),
      hdel: async () => 0,
    } as unknown as RedisClient;
    const stop = startProcessHeartbeat(redis, '{p}', 'worker', () => NOW, {
      store: 'postgres',
      schema: 20,
      protocol: PROTOCOL,
    });
    await stop();
    expect(written[0]![0]).toBe(keyOf('{p}'));
    expect(written[0]![1]).toBe(`worker:${process.pid}`);
    expect(JSON.parse(written[0]![2])).toMatchObject({
      at: NOW,
      release: { store: 'postgres', schema: 20, protocol: PROTOCOL },
    });
  });

  it('is live for STALE_AFTER_MS by the clock it is judged by; one that does not parse is skipped', () => {
    const hash = {
      'web:1': beatOfRelease(NOW - STALE_AFTER_MS),
      'worker:2': beatOfRelease(NOW - STALE_AFTER_MS - 1),
      'clock:3': beatOfThis(NOW, 16),
      'web:4': 'not json',
    };
    expect(liveProcesses(hash, NOW)).toEqual([
      { name: 'clock:3', release: { store: 'sqlite', schema: 16, protocol: 1 } },
      { name: 'web:1' },
    ]);
  });
});

describe('a process about to migrate', () => {
  const live = liveProcesses(
    {
      'web:11': beatOfRelease(NOW),
      'worker:12': beatOfMain(NOW),
      'worker:13': beatOfThis(NOW, 16),
      'web:14': beatOfThis(NOW, 13),
    },
    NOW,
  );

  it('counts as broken by a migration that cannot run beside older processes those that do not know it', () => {
    // A beat without a release is from a release before this one: it knows at most what the store had.
    expect(processesBrokenBy(live, 'sqlite', itemCount).map((p) => p.name)).toEqual([
      'web:11',
      'web:14',
      'worker:12',
    ]);
    expect(processesBrokenBy(live, 'postgres', itemCount).map((p) => p.name)).toEqual([
      'web:11',
      'worker:12',
    ]);
    expect(processesBrokenBy(live, 'sqlite', eventStates)).toEqual([]);
  });

  it("refuses, naming the live processes and what to do, judged by Redis's clock", async () => {
    const hostClock = vi.spyOn(Date, 'now').mockReturnValue(NOW + 3_600_000);
    try {
      const { redis, calls } = fakeRedis(
        { 'web:101': beatOfRelease(NOW - 2000), 'worker:102': beatOfMain(NOW - 14_000) },
        NOW,
      );
      const refusal = migrationGate(config, () => redis)('sqlite', [itemCount, eventStates]);
      await expect(refusal).rejects.toBeInstanceOf(OlderProcessesRunningError);
      await expect(refusal).rejects.toThrow(
        /migration 14 \(item count\) would break 2 process\(es\) of an earlier release still running: web:101, worker:102\. Stop the processes of the previous release first, then start this one/,
      );
      expect(calls).toEqual([`hgetall ${keyOf(config.REDIS_PREFIX)}`, 'disconnect']);
    } finally {
      hostClock.mockRestore();
    }
  });

  it('migrates once the older processes have stopped beating, or when none of its migrations needs them gone', async () => {
    const { redis } = fakeRedis({ 'web:101': beatOfRelease(NOW - STALE_AFTER_MS - 1) }, NOW);
    await expect(migrationGate(config, () => redis)('sqlite', [itemCount])).resolves.toBeUndefined();
    const connect = vi.fn();
    await expect(migrationGate(config, connect)('sqlite', [eventStates])).resolves.toBeUndefined();
    expect(connect).not.toHaveBeenCalled();
  });

  it('refuses when Redis cannot be reached: nothing says no older process runs', async () => {
    const redis = { status: 'connecting', on: () => redis, once: () => redis, disconnect: () => undefined };
    const gate = migrationGate({ ...config }, () => redis as unknown as RedisClient);
    await expect(gate('sqlite', [itemCount])).rejects.toThrow(/cannot be reached/);
  }, 15_000);
});

// The payloads as the release of 2026-11-27 and today's main validate them: strictly, an unknown field fails.
const orderJobOfMain = z.strictObject({ orderId: z.number().int().positive() });
const webhookJobOfMain = z.strictObject({
  deliveryId: z.number().int().positive(),
  attempt: z.number().int().positive(),
  webhookId: z.number().int().positive().optional(),
});

describe('jobs and messages between releases', () => {
  const processed = async (data: unknown) => {
    const work = vi.fn(async (_data: unknown) => 'completed' as const);
    const run = jobProcessor({
      queue: 'orders',
      schema: OrderJobs['process-order'],
      metrics: { recordJob: async () => undefined },
      work,
    });
    await run({ id: 'order-42', name: 'process-order', data } as unknown as Job, 'token');
    return work.mock.calls[0]![0];
  };

  it("processes a job of today's main (no version) as the new worker", async () => {
    expect(await processed({ orderId: 42 })).toEqual({ orderId: 42 });
  });

  it('processes a job of a later protocol version, the fields it adds ignored', async () => {
    expect(await processed({ orderId: 42, v: 2, priority: 'high' })).toEqual({ orderId: 42, v: 2 });
    await expect(processed({ v: 2 })).rejects.toBeInstanceOf(UnrecoverableError);
  });

  it('writes jobs that the workers of earlier releases accept', () => {
    expect(orderJobOfMain.parse(orderJobData(7))).toEqual({ orderId: 7 });
    // Why this release writes no version field: those workers would fail the job as a bad payload.
    expect(orderJobOfMain.safeParse({ ...orderJobData(7), v: PROTOCOL }).success).toBe(false);
    const delivery = { deliveryId: 3, attempt: 1, webhookId: 9 };
    expect(webhookJobOfMain.parse(delivery)).toEqual(delivery);
    expect(WebhookJobs['deliver-webhook'].parse({ ...delivery, v: 2, later: true })).toEqual({
      ...delivery,
      v: 2,
    });
  });

  it("hears an order's end as earlier releases publish it, and as a later one may extend it", () => {
    expect(endedJobOf('order-42')).toBe('order-42');
    expect(endedJobOf('order-42 2 more')).toBe('order-42');
    expect(endedAnswerOf('order-42')).toBeUndefined();
    expect(endedAnswerOf('order-42 2 more')).toBeUndefined();
  });

  it("says an order's end with its answer after the job id, which releases of protocol 1 hear by the first word", () => {
    const said: string[] = [];
    const answer = JSON.stringify({ orderId: 42, listings: [{ title: 'A Tale of Two Cities' }] });
    announceOrderEnd({ publish: (_, message) => said.push(message) }, '{p}', 42, answer);
    announceOrderEnd({ publish: (_, message) => said.push(message) }, '{p}', 43);
    expect(said.map(endedJobOf)).toEqual(['order-42', 'order-43']);
    expect(said.map(endedAnswerOf)).toEqual([answer, undefined]);
  });
});
