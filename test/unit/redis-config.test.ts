import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { parseRedisUrl } from '../../src/config/redis-url.js';

describe('the Redis key prefix', () => {
  it('is QUEUE_PREFIX wrapped in one hash tag, so every key of the service lands in one cluster slot', () => {
    expect(loadConfig({}).REDIS_PREFIX).toBe('{bookorders}');
    expect(loadConfig({ QUEUE_PREFIX: 'shop-2' }).REDIS_PREFIX).toBe('{shop-2}');
  });

  it.each(['{shop}', 'shop:eu', 'a}b'])('refuses QUEUE_PREFIX=%s, naming the variable', (prefix) => {
    expect(() => loadConfig({ QUEUE_PREFIX: prefix })).toThrow(/QUEUE_PREFIX: must not hold \{, \} or :/);
  });
});

describe('REDIS_URL and REDIS_CLUSTER', () => {
  it('takes one server by default, as before', () => {
    const config = loadConfig({ REDIS_URL: 'rediss://user:p%40ss@cache.internal:6380/2?family=6' });
    expect(config.REDIS_CLUSTER).toBe(false);
  });

  it('takes the seed nodes of a cluster with REDIS_CLUSTER=true, the scheme and login once', () => {
    const config = loadConfig({
      REDIS_URL: 'redis://:secret@10.0.0.1:7000,10.0.0.2:7001',
      REDIS_CLUSTER: 'true',
    });
    expect(config.REDIS_CLUSTER).toBe(true);
    expect(parseRedisUrl(config.REDIS_URL)).toEqual({
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
      ],
      tls: false,
      username: undefined,
      password: 'secret',
      db: 0,
      hasOptions: false,
    });
  });

  it.each([
    [{ REDIS_URL: 'http://localhost:6379' }, /REDIS_URL: must be a redis:\/\/ or rediss:\/\/ URL/],
    [{ REDIS_URL: 'redis://a:6379,b:6379' }, /REDIS_URL: names several hosts: set REDIS_CLUSTER=true/],
    [{ REDIS_URL: 'redis://a:1,redis://b:2', REDIS_CLUSTER: 'true' }, /REDIS_URL: names the scheme once/],
    [
      { REDIS_URL: 'redis://a:6379/3', REDIS_CLUSTER: 'true' },
      /REDIS_URL: a Redis Cluster has only database 0/,
    ],
    [
      { REDIS_URL: 'redis://a:6379,b:x', REDIS_CLUSTER: 'true' },
      /REDIS_URL: 'b:x' is not a host or host:port/,
    ],
    [{ REDIS_CLUSTER: 'yes' }, /REDIS_CLUSTER:/],
  ])('refuses %o, naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });
});
