import type { NextFunction, Request, Response } from 'express';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { EventEmitter } from 'node:events';
import { perClientSlots } from '../../src/http/batch-slots.js';
import { batchCost } from '../../src/http/endpoints/place-order-batch.endpoint.js';
import { rateLimit } from '../../src/http/rate-limit.js';
import { createRedis } from '../../src/redis/redis.js';

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

describe('batches in flight per client (BATCH_CONCURRENCY_PER_CLIENT)', () => {
  const request = (clientId: number) => {
    const res = Object.assign(new EventEmitter(), { locals: { auth: { clientId } } }) as unknown as Response;
    return res;
  };
  const enter = (slots: ReturnType<typeof perClientSlots>, res: Response) => {
    let passed = false;
    try {
      slots({} as Request, res, () => (passed = true));
    } catch (err) {
      return (err as { codes: number[]; headers: Record<string, string> }).codes.concat(
        Number((err as { headers: Record<string, string> }).headers['Retry-After']),
      );
    }
    return passed ? 'passed' : 'stuck';
  };

  it('lets two of a client in at once and refuses a third 4291 with Retry-After 1; another client is let in', () => {
    const slots = perClientSlots(2, 'batches');
    const [a, b, c] = [request(1), request(1), request(1)];
    expect(enter(slots, a)).toBe('passed');
    expect(enter(slots, b)).toBe('passed');
    expect(enter(slots, c)).toEqual([4291, 1]);
    expect(enter(slots, request(2))).toBe('passed');
    // Once one answer is sent (or its connection closes), the client has a slot again.
    (a as unknown as EventEmitter).emit('close');
    expect(enter(slots, request(1))).toBe('passed');
    expect(enter(slots, request(1))).toEqual([4291, 1]);
  });
});

describe('the rate-limit cost of a batch', () => {
  it('is one per item of a real order, one per 10 listings of a dry run, at least one per order', () => {
    const order = (listings: number, quantity?: number, dryrun = false) => ({
      listings: Array(listings).fill(quantity === undefined ? {} : { quantity }),
      ...(dryrun ? { dryrun } : {}),
    });
    expect(batchCost([order(1)])).toBe(1);
    expect(batchCost([order(1, 250)])).toBe(250);
    expect(batchCost([order(10), order(11, 2), order(100)])).toBe(10 + 22 + 100);
    // 200 orders of 250 items cost what 50,000 orders of one item would.
    expect(batchCost(Array(200).fill(order(1, 250)))).toBe(50_000);
    expect(batchCost(Array(200).fill(order(1, 250)))).toBe(batchCost(Array(50_000).fill(order(1, 1))));
    // More items than an order may hold costs what the most it may hold does; odd quantities count one.
    expect(batchCost([order(2, 1000), order(3, -1), order(1, 2.5)])).toBe(250 + 3 + 1);
    expect(
      batchCost([order(1, 250, true), order(10, 1, true), order(11, 1, true), order(100, 1, true)]),
    ).toBe(1 + 1 + 2 + 10);
    expect(batchCost([null, 'x', {}, { listings: 'many' }])).toBe(4);
  });
});
