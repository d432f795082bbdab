// A script called by its SHA1, sent whole only when the server does not know it.
import crypto from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { luaScript } from '../../src/redis/lua-script.js';

const redis = new Redis(inject('redisUrl'));
afterAll(() => redis.disconnect());

const LUA = `return redis.call('INCRBY', KEYS[1], ARGV[1])`;
const SHA = crypto.createHash('sha1').update(LUA).digest('hex');
const incrBy = luaScript(LUA);

describe('a Lua script called by its SHA1', () => {
  it('runs on a server that does not know it yet (NOSCRIPT), which then knows it, and gives each call its result', async () => {
    const key = `lua-test:${crypto.randomUUID()}`;
    await redis.script('FLUSH');
    expect(await redis.script('EXISTS', SHA)).toEqual([0]);
    expect(await incrBy(redis, [key], [5])).toBe(5);
    expect(await redis.script('EXISTS', SHA)).toEqual([1]);
    expect(await incrBy(redis, [key], [2])).toBe(7);
    expect(await redis.get(key)).toBe('7');
  });

  it("passes the script's own error on without running it a second time", async () => {
    const key = `lua-test:${crypto.randomUUID()}`;
    await redis.set(key, 'not a number');
    await expect(incrBy(redis, [key], [1])).rejects.toThrow(/not an integer/);
    await redis.script('FLUSH');
    await expect(incrBy(redis, [key], [1])).rejects.toThrow(/not an integer/);
    expect(await redis.get(key)).toBe('not a number');
  });
});
