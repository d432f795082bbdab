import crypto from 'node:crypto';
import type { RedisClient } from './redis.js';
import { luaScript } from './lua-script.js';

// Only the holder of the token may release or extend: a lease that expired and was taken by another process
// must not be deleted by its former holder.
const RELEASE = luaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`);
const EXTEND = luaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`);

export interface LockOptions {
  /** How long the lease lives unless extended; it is extended every third of it while held. */
  ttlMs: number;
  /** How long to keep trying when another holder has it; 0 tries once. */
  waitMs?: number;
}

export type LockResult<T> = { acquired: true; value: T } | { acquired: false };

/**
 * Runs `fn` while holding a Redis lease (`SET key token NX PX ttl`), so that one process at a time runs it.
 * `lost` aborts when the lease could not be extended (Redis gone, or the lease expired and another took it):
 * `fn` should stop at its next safe point. Redis errors while acquiring are thrown.
 */
export async function withLock<T>(
  redis: RedisClient,
  key: string,
  options: LockOptions,
  fn: (lost: AbortSignal) => Promise<T>,
): Promise<LockResult<T>> {
  const token = crypto.randomBytes(16).toString('hex');
  if (!(await acquire(redis, key, token, options))) return { acquired: false };
  const lost = new AbortController();
  const timer = setInterval(() => void extend(redis, key, token, options.ttlMs, lost), options.ttlMs / 3);
  timer.unref();
  try {
    return { acquired: true, value: await fn(lost.signal) };
  } finally {
    clearInterval(timer);
    // A release that fails leaves the lease to expire on its own.
    await RELEASE(redis, [key], [token]).catch(() => undefined);
  }
}

async function acquire(
  redis: RedisClient,
  key: string,
  token: string,
  options: LockOptions,
): Promise<boolean> {
  const deadline = Date.now() + (options.waitMs ?? 0);
  for (;;) {
    if ((await redis.set(key, token, 'PX', options.ttlMs, 'NX')) === 'OK') return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function extend(redis: RedisClient, key: string, token: string, ttlMs: number, lost: AbortController) {
  if (lost.signal.aborted) return;
  try {
    if ((await EXTEND(redis, [key], [token, ttlMs])) !== 1) lost.abort(new Error(`lock ${key} lost`));
  } catch (err) {
    // Without Redis nobody can tell whether the lease still holds: stop rather than risk two holders.
    lost.abort(err);
  }
}

/** The next 'ready' of each connection that is not ready yet: one listener however many callers wait for it. */
const readyWaits = new WeakMap<RedisClient, Promise<void>>();

function nextReady(redis: RedisClient): Promise<void> {
  let wait = readyWaits.get(redis);
  if (!wait) {
    wait = new Promise<void>((resolve) =>
      redis.once('ready', () => {
        readyWaits.delete(redis);
        resolve();
      }),
    );
    readyWaits.set(redis, wait);
  }
  return wait;
}

/**
 * Resolves when the connection is ready; rejects after `timeoutMs` (a fail-fast connection drops commands until
 * then). Callers waiting at once share one 'ready' listener (a burst of requests at startup, each checking a
 * lockout, passed node's ten and it warned of a leak).
 */
export function whenReady(redis: RedisClient, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`redis not ready after ${timeoutMs} ms (${redis.status})`)),
      timeoutMs,
    );
    void nextReady(redis).then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
