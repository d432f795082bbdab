import type { NextFunction, Request, Response } from 'express';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { rateLimit } from '../../src/http/rate-limit.js';
import { createRedis } from '../../src/queue/redis.js';

describe('rate limit when Redis cannot be reached', () => {
  it('lets the request through (fails open) and says so in the log', async () => {
    // Port 1 on loopback: nothing listens, so every command fails at once.
    const redis = createRedis({ REDIS_URL: 'redis://127.0.0.1:1', REDIS_CLUSTER: false }, 'rate-limit-unit');
    redis.on('error', () => undefined);
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const middleware = rateLimit({ redis, prefix: '{unit}', perSecond: 1, clock: Date.now, logger });
    const res = {
      locals: { auth: { clientId: 1, accessKey: 'AKunit', requestId: 'r1' } },
    } as unknown as Response;
    let nextCalls = 0;
    const next: NextFunction = (err?: unknown) => {
      expect(err).toBeUndefined();
      nextCalls += 1;
    };
    for (let i = 0; i < 3; i++) await middleware({} as Request, res, next);
    redis.disconnect();
    expect(nextCalls).toBe(3);
    expect(lines.some((line) => line.includes('rate limit skipped: redis unavailable'))).toBe(true);
  });
});
