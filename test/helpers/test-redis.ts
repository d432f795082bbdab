// A client of the run's real Redis for tests that drive one piece (the metrics recorder, the clock's counts)
// without a whole test service, and a logger that keeps the warnings it is given.
import { inject } from 'vitest';
import type { Logger } from '../../src/logger.js';
import { whenReady } from '../../src/redis/redis-lock.js';
import { createRedis, type RedisClient } from '../../src/redis/redis.js';

/** A connection to the run's Redis, ready. */
export async function connectTestRedis(name: string): Promise<RedisClient> {
  const redis = createRedis({ REDIS_URL: inject('redisUrl'), REDIS_CLUSTER: false }, name);
  await whenReady(redis, 10_000);
  return redis;
}

/** A logger whose warnings' messages are kept in `warnings`, in order. */
export function warningsLogger(): { logger: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const logger = { warn: (_: unknown, message: string) => void warnings.push(message) } as unknown as Logger;
  return { logger, warnings };
}
