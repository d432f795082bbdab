import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type { Logger } from '../../src/logger.js';
import { scheduleStoreCounts } from '../../src/metrics/order-store.metrics.js';
import { whenReady } from '../../src/redis/redis-lock.js';
import { createRedis, type RedisClient } from '../../src/redis/redis.js';
import type { StoreCounts } from '../../src/store/store.port.js';
import { sleep, until } from '../helpers/wait.js';

// The clock's counts of the whole store, on the run's real Redis: their cost grows with the store, so a count
// that took long keeps the next one away for COUNT_SPACING times as long, across every clock of the deployment.

let redis: RedisClient;
const prefix = `t${crypto.randomBytes(5).toString('hex')}`;
const warnings: string[] = [];
const logger = { warn: (_: unknown, message: string) => void warnings.push(message) } as unknown as Logger;

beforeAll(async () => {
  redis = createRedis({ REDIS_URL: inject('redisUrl'), REDIS_CLUSTER: false }, 'test-store-counts');
  await whenReady(redis, 10_000);
});
afterAll(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

describe("the clock's store counts", () => {
  it('when a count takes long, then no clock counts again for COUNT_SPACING times as long', async () => {
    const COUNT_MS = 200;
    const EVERY_MS = 1000;
    let counted = 0;
    const store = {
      async counts(): Promise<StoreCounts> {
        counted += 1;
        await sleep(COUNT_MS);
        return { itemsByStatus: [{ status: 5, count: 3 }], unsettledByPhase: [] };
      },
    };
    // Two clocks of one deployment, each ticking every second (STORE_COUNTS_EVERY_S=1, the least).
    const clocks = [1, 2].map(() => scheduleStoreCounts({ store, redis, prefix, logger }, EVERY_MS));
    try {
      await until(
        async () => (await redis.get(`${prefix}:metrics:store-counts`)) !== null,
        10_000,
        'published',
      );
      // Without the spacing the turn is free again 750 ms after it was taken, and the next tick counts.
      await sleep(1.5 * EVERY_MS);
      expect(counted).toBe(1);
      const held = await redis.pttl(`${prefix}:metrics:store-counts:turn`);
      expect(held).toBeGreaterThan(0);
    } finally {
      await Promise.all(clocks.map((clock) => clock.stop()));
    }
    expect(warnings).toEqual([]);
  });
});
