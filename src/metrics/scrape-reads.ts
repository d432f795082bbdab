import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from '../redis/redis.js';

/**
 * The reads of Redis a scrape makes (every key under one `{prefix}` hash tag, BullMQ's too, so one slot in a
 * cluster).
 */
export interface ScrapeReads {
  hgetall(key: string): Promise<Record<string, string>>;
  get(key: string): Promise<string | null>;
  llen(key: string): Promise<number>;
  zcard(key: string): Promise<number>;
}

type Callback<T> = (err?: Error | null, value?: T) => void;

/**
 * Reads gathered while the registry asks every metric of a scrape (all in one tick) and sent in one pipeline:
 * one write to the socket and one round trip for the whole scrape, instead of one per metric. Each read still
 * succeeds or fails on its own, as it would alone.
 */
export function scrapeReads(redis: RedisClient): ScrapeReads {
  let pipeline: ChainableCommander | null = null;
  const queued = <T>(add: (pipeline: ChainableCommander, callback: Callback<T>) => void) =>
    new Promise<T>((resolve, reject) => {
      if (!pipeline) {
        const batch = (pipeline = redis.pipeline());
        process.nextTick(() => {
          pipeline = null;
          // Every command's own callback has its result or error; exec's summary adds nothing.
          batch.exec().catch(() => undefined);
        });
      }
      add(pipeline, (err, value) => (err ? reject(err) : resolve(value as T)));
    });
  return {
    hgetall: (key) => queued((p, callback) => p.hgetall(key, callback)),
    get: (key) => queued((p, callback) => p.get(key, callback)),
    llen: (key) => queued((p, callback) => p.llen(key, callback)),
    zcard: (key) => queued((p, callback) => p.zcard(key, callback)),
  };
}
