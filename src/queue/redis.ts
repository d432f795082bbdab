import { Redis } from 'ioredis';

/**
 * A connection for commands that must fail fast when Redis is down (lockouts, rate limits, enqueueing),
 * so a request is never held hostage by a reconnect loop.
 */
export function createRedis(url: string, name: string): Redis {
  return new Redis(url, {
    connectionName: name,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2000,
    lazyConnect: false,
  });
}

/** A connection for BullMQ workers and queue events, which block and must retry for ever. */
export function createBlockingRedis(url: string, name: string): Redis {
  return new Redis(url, { connectionName: name, maxRetriesPerRequest: null });
}
