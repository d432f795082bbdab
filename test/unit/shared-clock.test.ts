import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { RedisClient } from '../../src/redis/redis.js';
import { startSharedClock } from '../../src/redis/shared-clock.js';

/** A Redis whose TIME is this host's clock minus `behindMs`, or fails once `failing` is set. */
function redisBehind(behindMs: number) {
  const state = { behindMs, failing: false };
  const redis = {
    status: 'ready',
    async time(): Promise<[string, string]> {
      if (state.failing) throw new Error('Command timed out');
      const ms = Date.now() - state.behindMs;
      return [String(Math.floor(ms / 1000)), String((ms % 1000) * 1000)];
    },
  } as unknown as RedisClient;
  return { redis, state };
}

function logged() {
  const lines: { msg: string; clockOffsetMs?: number }[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({ write: (chunk, _encoding, done) => done(void lines.push(JSON.parse(String(chunk)))) }),
  );
  return { logger, lines };
}

describe('the shared clock', () => {
  it("is this host's clock corrected by its offset from Redis's, and says when the host is off the bound", async () => {
    const { redis } = redisBehind(240_000);
    const { logger, lines } = logged();
    const clock = await startSharedClock(redis, logger);
    try {
      expect(Math.abs(clock.offsetMs() - 240_000)).toBeLessThan(1500);
      expect(Math.abs(clock.now() - (Date.now() - 240_000))).toBeLessThan(1500);
      await expect.poll(() => lines.length).toBe(1);
      expect(lines[0]!.msg).toMatch(/^this host's clock is off Redis's/);
      expect(lines[0]!.clockOffsetMs).toBeGreaterThan(230_000);
    } finally {
      clock.stop();
    }
  });

  it('keeps the host clock (offset 0) while Redis does not answer, and says nothing within the bound', async () => {
    const { redis, state } = redisBehind(0);
    state.failing = true;
    const { logger, lines } = logged();
    const clock = await startSharedClock(redis, logger);
    try {
      expect(clock.offsetMs()).toBe(0);
      expect(Math.abs(clock.now() - Date.now())).toBeLessThan(50);
      expect(lines).toEqual([]);
    } finally {
      clock.stop();
    }
  });
});
