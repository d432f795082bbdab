import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { countStoreOnTurn } from '../../src/metrics/order-store.metrics.js';
import { schedulePass } from '../../src/processes/schedule.js';
import { createRedis, type RedisClient } from '../../src/redis/redis.js';
import type { StoreCounts } from '../../src/store/port/store.port.js';
import { connectTestRedis, warningsLogger } from '../helpers/test-redis.js';
import { sleep, until } from '../helpers/wait.js';

// The clock's counts of the whole store, on the run's real Redis: their cost grows with the store, so a count
// that took long keeps the next one away for COUNT_SPACING times as long, across every clock of the deployment.

let redis: RedisClient;
const prefix = `t${crypto.randomBytes(5).toString('hex')}`;
const { logger, warnings } = warningsLogger();

beforeAll(async () => {
  redis = await connectTestRedis('test-store-counts');
});
afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

const COUNT_MS = 200;
const EVERY_MS = 1000;

/** One clock's store counts, on the clock's schedule (src/processes/clock.process.ts). */
const storeCounts = (deps: Parameters<typeof countStoreOnTurn>[0]) =>
  schedulePass(
    { name: 'store counts', when: { everyMs: EVERY_MS }, run: countStoreOnTurn(deps, EVERY_MS) },
    deps.logger,
  );

/**
 * Two clocks of one deployment, each ticking every second (STORE_COUNTS_EVERY_S=1, the least), over counts that
 * take COUNT_MS and then `end`: how many counts ran in the 1.5 s after the first ended, and the turn's time left.
 * Without the spacing the turn is free again 750 ms after it was taken, and the next tick counts.
 */
async function countsAfterOne(keys: string, end: () => StoreCounts) {
  let counted = 0;
  let ended = false;
  const store = {
    async counts(): Promise<StoreCounts> {
      counted += 1;
      await sleep(COUNT_MS);
      ended = true;
      return end();
    },
  };
  const clocks = [1, 2].map(() => storeCounts({ store, redis, prefix: keys, logger }));
  try {
    await until(() => ended, 10_000, 'a count ended');
    await sleep(1.5 * EVERY_MS);
    return { counted, held: await redis.pttl(`${keys}:metrics:store-counts:turn`) };
  } finally {
    await Promise.all(clocks.map((clock) => clock.stop()));
  }
}

describe("the clock's store counts", () => {
  it('when a count takes long, then no clock counts again for COUNT_SPACING times as long', async () => {
    const after = await countsAfterOne(`${prefix}a`, () => ({
      itemsByStatus: [{ status: 5, count: 3 }],
      unsettledByPhase: [],
    }));
    expect(after.counted).toBe(1);
    expect(after.held).toBeGreaterThan(0);
    expect(await redis.get(`${prefix}a:metrics:store-counts`)).not.toBeNull();
    expect(warnings).toEqual([]);
  });

  it('when a count fails after a while (a timeout), then it is spaced as well, and logged', async () => {
    const after = await countsAfterOne(`${prefix}b`, () => {
      throw new Error('the database gave no answer within 200 ms (DATABASE_TIMEOUT_MS)');
    });
    expect(after.counted).toBe(1);
    expect(after.held).toBeGreaterThan(0);
    expect(warnings).toEqual(['store counts not published; the next tick tries again']);
  });

  it('when the clock starts, then its first count waits for its Redis connection instead of warning', async () => {
    const { logger: quiet, warnings: said } = warningsLogger();
    // A connection made a moment ago, as the clock's is at its start: still connecting.
    const fresh = createRedis(
      { REDIS_URL: inject('redisUrl'), REDIS_CLUSTER: false },
      'test-store-counts-fresh',
    );
    expect(fresh.status).not.toBe('ready');
    const store = { counts: async (): Promise<StoreCounts> => ({ itemsByStatus: [], unsettledByPhase: [] }) };
    const clock = storeCounts({ store, redis: fresh, prefix: `${prefix}c`, logger: quiet });
    try {
      await until(
        async () => (await redis.get(`${prefix}c:metrics:store-counts`)) !== null,
        10_000,
        'counts',
      );
      expect(said).toEqual([]);
    } finally {
      await clock.stop();
      fresh.disconnect();
    }
  });
});
