import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Lockout } from '../../src/http/lockout.js';
import { createLogger } from '../../src/logger.js';

const redis = new Redis(inject('redisUrl'));
const logger = createLogger({ LOG_LEVEL: 'silent', LOG_PRETTY: 'false' }, 'test');
const policy = { name: 'probe', maxFailures: 3, windowMs: 60_000, lockMs: 600_000 };
const prefix = loadConfig({ QUEUE_PREFIX: `lockout${process.pid}` }).REDIS_PREFIX;
afterAll(() => redis.disconnect());

describe('a lockout shared by two web processes', () => {
  it('when one process locks a subject, then the other refuses it once its one-second memory has passed', async () => {
    const web1 = new Lockout(redis, prefix, policy, logger);
    const web2 = new Lockout(redis, prefix, policy, logger);
    const t = Date.now();
    expect(await web2.lockedForMs('key-a', t)).toBe(0);
    expect(await web1.recordFailure('key-a', t)).toBe(false);
    expect(await web1.recordFailure('key-a', t + 1)).toBe(false);
    expect(await web1.recordFailure('key-a', t + 2)).toBe(true);
    expect(await web1.lockedForMs('key-a', t + 3)).toBeGreaterThan(599_000);
    expect(await web2.lockedForMs('key-a', t + 500)).toBe(0);
    expect(await web2.lockedForMs('key-a', t + 1001)).toBeGreaterThan(590_000);
  });

  it('when failures are spread beyond the window, then they do not add up to a lock', async () => {
    const web = new Lockout(redis, prefix, { ...policy, windowMs: 1000 }, logger);
    const t = Date.now();
    await web.recordFailure('key-b', t - 5000);
    await web.recordFailure('key-b', t - 3000);
    expect(await web.recordFailure('key-b', t)).toBe(false);
    expect(await web.lockedForMs('key-b', t)).toBe(0);
  });
});
