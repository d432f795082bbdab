import type { Redis, RedisOptions } from 'ioredis';
import { ioredis } from './ioredis.js';
import type { Config } from '../config/config.js';
import { noteServer } from '../server-changes.js';
import { parseSentinels } from '../config/redis-url.js';

/** What picks the Redis server of a single-server connection: REDIS_URL, or the master Sentinel names. */
export type RedisTargetConfig = Pick<
  Config,
  'REDIS_URL' | 'REDIS_SENTINELS' | 'REDIS_SENTINEL_MASTER' | 'REDIS_SENTINEL_PASSWORD'
>;

/**
 * A connection to one Redis server: REDIS_URL's, or with REDIS_SENTINELS the master the Sentinels name for
 * REDIS_SENTINEL_MASTER. REDIS_URL's login, database and TLS then apply to that master (its host is not used).
 * ioredis asks the Sentinels for the master at each (re)connection and checks the server's role, and a server
 * that answers READONLY (a demoted master) is left for the new one, the command sent again. The server each connection reaches is noted
 * (server-changes.ts).
 */
export function newRedis(config: RedisTargetConfig, options: RedisOptions): Redis {
  const redis = new ioredis.Redis(config.REDIS_URL, { ...options, ...sentinelOptions(config) });
  redis.on('ready', () => {
    const stream = (redis as unknown as { stream?: { remoteAddress?: string; remotePort?: number } }).stream;
    if (stream?.remoteAddress) noteServer('redis', `${stream.remoteAddress}:${stream.remotePort}`);
  });
  return redis;
}

function sentinelOptions(config: RedisTargetConfig): RedisOptions {
  if (!config.REDIS_SENTINELS) return {};
  return {
    sentinels: parseSentinels(config.REDIS_SENTINELS),
    name: config.REDIS_SENTINEL_MASTER,
    sentinelPassword: config.REDIS_SENTINEL_PASSWORD,
    role: 'master',
    // Not ioredis's failoverDetector: its +switch-master, arriving while a connection is being opened again,
    // ends that connection for good ("Connection is closed" ever after, seen in scripts/bench/failover.ts). A
    // master lost closes its connections, and a promotion makes Redis close its clients': each reconnection
    // asks the Sentinels again.
    reconnectOnError: (err) => (err.message.startsWith('READONLY') ? 2 : false),
  };
}

/** Where the service's Redis is, for a message: REDIS_URL, or the Sentinels' master. */
export function redisWhere(config: RedisTargetConfig): string {
  return config.REDIS_SENTINELS
    ? `master ${config.REDIS_SENTINEL_MASTER} of Sentinels ${config.REDIS_SENTINELS}`
    : config.REDIS_URL;
}
