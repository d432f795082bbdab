// The endpoint gate that two worker processes share through Redis: per-endpoint slots and the circuit breaker.
import crypto from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { createEndpointGate, type EndpointGate, type GateEntry } from '../../src/redis/endpoint-gate.js';

const redis = new Redis(inject('redisUrl'));
afterAll(() => redis.disconnect());

let now = Date.parse('2026-11-24T10:00:00.000Z');

/** Two workers' gates on one fresh prefix, on a clock the test moves. */
function twoWorkers(): [EndpointGate, EndpointGate] {
  const prefix = loadConfig({ QUEUE_PREFIX: `gate${crypto.randomBytes(4).toString('hex')}` }).REDIS_PREFIX;
  const options = {
    redis,
    prefix,
    perEndpoint: 2,
    holdMs: 20_000,
    breakerFailures: 3,
    pauseMs: 1000,
    maxPauseMs: 3000,
    clock: () => now,
  };
  return [createEndpointGate(options), createEndpointGate(options)];
}

const token = (entry: GateEntry) => {
  if (entry.kind !== 'enter') throw new Error(`not entered: ${entry.kind}`);
  return entry.token;
};

describe('an endpoint gate shared by two workers', () => {
  it('when an endpoint has its slots taken, then a third attempt waits, another endpoint does not, and a dead holder’s slot frees itself', async () => {
    const [a, b] = twoWorkers();
    const first = token(await a.enter(1));
    token(await b.enter(1));
    expect(await a.enter(1)).toEqual({ kind: 'busy', slow: false });
    // An attempt under way for more than a second makes the endpoint slow: the next one is not worth waiting for.
    now += 1001;
    expect(await a.enter(1)).toEqual({ kind: 'busy', slow: true });
    now -= 1001;
    expect((await b.enter(2)).kind).toBe('enter');
    // A patient attempt is let in as soon as a slot of this process is left.
    const patient = a.enter(1, 10_000);
    await a.leave(1, first, 'ok');
    token(await patient);
    expect(await b.enter(1, 50)).toEqual({ kind: 'busy', slow: false });
    now += 20_001;
    // Both holders of endpoint 1 "died" without leaving: their slots expire.
    token(await a.enter(1));
    token(await a.enter(1));
  });

  it('when an endpoint fails again and again, then it is paused, longer each time, and a success closes it', async () => {
    const [a, b] = twoWorkers();
    const fail = async (gate: EndpointGate) => gate.leave(7, token(await gate.enter(7)), 'failed');
    expect(await fail(a)).toBe(0);
    expect(await fail(b)).toBe(0);
    const late = token(await a.enter(7));
    expect(await fail(b)).toBe(1000);
    expect(await b.enter(7)).toEqual({ kind: 'paused', waitMs: 1000 });
    // An attempt that started before the pause and fails during it does not lengthen it.
    expect(await a.leave(7, late, 'failed')).toBe(0);
    now += 1000;
    // After the pause, the first failure pauses it again, for twice as long, then at most maxPauseMs.
    expect(await fail(a)).toBe(2000);
    expect(await a.enter(7)).toEqual({ kind: 'paused', waitMs: 2000 });
    now += 2000;
    expect(await fail(b)).toBe(3000);
    now += 3000;
    expect(await a.leave(7, token(await a.enter(7)), 'none')).toBe(0);
    const busy = token(await a.enter(7));
    token(await b.enter(7));
    expect(await a.enter(7)).toEqual({ kind: 'busy', slow: true });
    expect(await b.leave(7, busy, 'ok')).toBe(0);
    expect(await fail(a)).toBe(0);
    expect(await fail(a)).toBe(0);
    expect(await fail(a)).toBe(1000);
  });

  it('when an endpoint answers slowly again and again, then it is paused as a failing one is, and a timely answer ends the count', async () => {
    const [a, b] = twoWorkers();
    const leave = async (gate: EndpointGate, result: 'slow' | 'failed' | 'ok') =>
      gate.leave(9, token(await gate.enter(9)), result);
    expect(await leave(a, 'slow')).toBe(0);
    expect(await leave(b, 'slow')).toBe(0);
    expect(await leave(a, 'ok')).toBe(0);
    // Slow and failed count together, in a row.
    expect(await leave(a, 'slow')).toBe(0);
    expect(await leave(b, 'failed')).toBe(0);
    expect(await leave(a, 'slow')).toBe(1000);
    expect(await b.enter(9)).toEqual({ kind: 'paused', waitMs: 1000 });
    now += 1000;
    expect(await leave(b, 'slow')).toBe(2000);
  });
});
