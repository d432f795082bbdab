import { Cluster, Redis, type ClusterOptions } from 'ioredis';
import type { Config } from '../config.js';
import { newRedis, type RedisTargetConfig } from './redis-sentinel.js';
import { parseRedisUrl } from './redis-url.js';

/** A connection to one Redis server or to a Redis Cluster (REDIS_CLUSTER=true): the service uses either alike. */
export type RedisClient = Redis | Cluster;

export type RedisConfig = Pick<Config, 'REDIS_CLUSTER'> & RedisTargetConfig;

/**
 * A connection for commands that must fail fast when Redis is down (lockouts, rate limits, enqueueing),
 * so a request is never held hostage by a reconnect loop.
 */
export function createRedis(config: RedisConfig, name: string): RedisClient {
  const options = { connectionName: name, maxRetriesPerRequest: 1, connectTimeout: 2000 };
  if (config.REDIS_CLUSTER) return createCluster(config.REDIS_URL, options, { enableOfflineQueue: false });
  return newRedis(config, { ...options, enableOfflineQueue: false, lazyConnect: false });
}

/** A connection for BullMQ workers and queue events, which block and must retry for ever. */
export function createBlockingRedis(config: RedisConfig, name: string): RedisClient {
  const options = { connectionName: name, maxRetriesPerRequest: null };
  if (config.REDIS_CLUSTER) return createCluster(config.REDIS_URL, options, {});
  return newRedis(config, options);
}

/** The seeds of REDIS_URL; the login and TLS of the URL apply to every node the cluster reports. */
function createCluster(
  url: string,
  redisOptions: NonNullable<ClusterOptions['redisOptions']>,
  options: ClusterOptions,
): Cluster {
  const seeds = parseRedisUrl(url);
  return new Cluster(seeds.nodes, {
    ...options,
    lazyConnect: false,
    redisOptions: {
      ...redisOptions,
      username: seeds.username,
      password: seeds.password,
      tls: seeds.tls ? {} : undefined,
    },
  });
}
