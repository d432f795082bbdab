import type { Cluster, ClusterOptions, Redis } from 'ioredis';
import { ioredis } from './ioredis.js';
import type { Config } from '../config/config.js';
import { newRedis, type RedisTargetConfig } from './redis-sentinel.js';
import { parseRedisUrl } from '../config/redis-url.js';

/** A connection to one Redis server or to a Redis Cluster (REDIS_CLUSTER=true): the service uses either alike. */
export type RedisClient = Redis | Cluster;

export type RedisConfig = Pick<Config, 'REDIS_CLUSTER'> & RedisTargetConfig;

/**
 * What every connection has, so that a link that stops carrying bytes without closing (a dead switch, a paused
 * host) is given up and replaced: a bound on connecting, TCP keepalive from 5 s of silence (the kernel's probes
 * then notice a dead peer of an idle connection), and `socketTimeout`: a connection that waits for an answer
 * and receives no byte for that long is destroyed and made again (ioredis).
 */
const LINK_BOUNDS = { connectTimeout: 2000, keepAlive: 5000 };

/**
 * A connection for commands that must fail fast when Redis is down (lockouts, rate limits, enqueueing),
 * so a request is never held hostage by a reconnect loop: no offline queue, one retry, a command with no answer
 * within 1 s fails (its caller fails open or answers as for Redis down), and a link that gives no byte for 3 s
 * while a command waits is dropped and made again. The 1 s applies once the connection is ready: ioredis would
 * bound its handshake too, and a Redis slow to accept (a connection held a second or two) would never be joined.
 */
export function createRedis(config: RedisConfig, name: string): RedisClient {
  const options = { ...LINK_BOUNDS, connectionName: name, maxRetriesPerRequest: 1, socketTimeout: 3000 };
  if (config.REDIS_CLUSTER) return createCluster(config.REDIS_URL, options, { enableOfflineQueue: false });
  const redis = newRedis(config, { ...options, enableOfflineQueue: false, lazyConnect: false });
  redis.on('ready', () => (redis.options.commandTimeout = COMMAND_TIMEOUT_MS));
  redis.on('close', () => (redis.options.commandTimeout = undefined));
  return redis;
}

const COMMAND_TIMEOUT_MS = 1000;

/**
 * A connection for BullMQ workers and the web's subscription to orders' ends, which block or listen and must
 * retry for ever. No command time-out: it would break BullMQ's blocking commands (BZPOPMIN), which BullMQ bounds
 * itself (at most 10 s, and a watchdog 1 s past that resets the connection). A link silent for 15 s, longer than
 * any of them, is replaced.
 */
export function createBlockingRedis(config: RedisConfig, name: string): RedisClient {
  const options = { ...LINK_BOUNDS, connectionName: name, maxRetriesPerRequest: null, socketTimeout: 15_000 };
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
  return new ioredis.Cluster(seeds.nodes, {
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
