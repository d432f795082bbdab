import type { RedisClient } from '../redis/redis.js';
import { serverStates, type ServerState } from '../server-changes.js';

// Workers and the clock serve no HTTP, so each process of the deployment writes a small snapshot of itself
// (memory, CPU) into one Redis hash every few seconds; web processes expose them with role and pid labels.
// A process that stopped writing (killed, host gone) drops out after three missed beats.
const BEAT_MS = 5000;
export const STALE_AFTER_MS = 3 * BEAT_MS;

export interface Beat {
  rss: number;
  heapUsed: number;
  cpuSeconds: number;
  startedAt: number;
  at: number;
  /** The Redis and PostgreSQL servers the process is connected to (absent in a beat of an older process). */
  servers?: Record<string, ServerState>;
}

export const keyOf = (prefix: string) => `${prefix}:metrics:processes`;

function beat(now: number): Beat {
  const { user, system } = process.cpuUsage();
  const memory = process.memoryUsage();
  return {
    rss: memory.rss,
    heapUsed: memory.heapUsed,
    cpuSeconds: (user + system) / 1e6,
    startedAt: Math.round(now - process.uptime() * 1000),
    at: now,
    servers: serverStates(),
  };
}

/**
 * Publishes this process's snapshot now and every few seconds; the returned function stops and removes it.
 * `clock` is the deployment's shared one (deps.clock), which the web processes judge the beats by.
 */
export function startProcessHeartbeat(
  redis: RedisClient,
  prefix: string,
  role: string,
  clock: () => number = Date.now,
): () => Promise<void> {
  const field = `${role}:${process.pid}`;
  const publish = () =>
    void redis.hset(keyOf(prefix), field, JSON.stringify(beat(clock()))).catch(() => undefined);
  // Commands fail fast while the connection is still opening; the first beat waits for it.
  if (redis.status === 'ready') publish();
  else redis.once('ready', publish);
  const timer = setInterval(publish, BEAT_MS).unref();
  return async () => {
    clearInterval(timer);
    await redis.hdel(keyOf(prefix), field).catch(() => undefined);
  };
}
