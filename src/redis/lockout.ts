import type { Request } from 'express';
import { whenReady } from './redis-lock.js';
import type { RedisClient } from './redis.js';
import type { Logger } from '../logger.js';
import { luaScript } from './lua-script.js';

export interface LockoutPolicy {
  name: string;
  maxFailures: number;
  windowMs: number;
  lockMs: number;
}

// Sliding window of failures in a sorted set; the lock is a key of its own that outlives the window.
const RECORD_FAILURE = luaScript(`
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('ZADD', KEYS[1], now, ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[4])
  redis.call('DEL', KEYS[1])
  return 1
end
return 0`);

/**
 * "N failures in a window lock the subject for a while", kept in Redis so that it holds across web processes.
 * When Redis is unreachable it fails open: the lockout is a defence, not a reason to refuse every client.
 */
export class Lockout {
  private sequence = 0;
  // Per-process memory of recent answers: a lock set elsewhere is seen within CACHE_MS, and a hot key costs one
  // Redis round trip a second instead of one per request.
  private readonly known = new Map<string, { until: number; checkedAt: number }>();

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly policy: LockoutPolicy,
    private readonly logger: Logger,
  ) {}

  /** Whether a check found the connection ready once: a connection made again after that is an outage. */
  private started = false;

  // Both keys start with the prefix's hash tag (config.REDIS_PREFIX): RECORD_FAILURE touches them on one slot.
  private keys(subject: string): [string, string] {
    const base = `${this.prefix}:${this.policy.name}:${subject}`;
    return [`${base}:failures`, `${base}:locked`];
  }

  /** Milliseconds the subject stays locked, 0 when it is not. */
  async lockedForMs(subject: string, now: number): Promise<number> {
    const cached = this.known.get(subject);
    if (cached && now - cached.checkedAt < CACHE_MS) return Math.max(0, cached.until - now);
    // A connection still being made (a process just started) is waited for: failing open is for outages only.
    if (!this.started && STARTING.has(this.redis.status))
      await whenReady(this.redis, STARTUP_WAIT_MS).catch(() => undefined);
    try {
      const ttl = await this.redis.pttl(this.keys(subject)[1]);
      this.remember(subject, now, ttl > 0 ? now + ttl : 0);
      return ttl > 0 ? ttl : 0;
    } catch (err) {
      this.logger.warn({ err, lockout: this.policy.name }, 'lockout check skipped: redis unavailable');
      return 0;
    }
  }

  private remember(subject: string, now: number, until: number): void {
    if (this.known.size >= CACHE_ENTRIES) this.known.clear();
    this.known.set(subject, { until, checkedAt: now });
  }

  /** Records one failure; true when it locked the subject. */
  async recordFailure(subject: string, now: number): Promise<boolean> {
    const { windowMs, maxFailures, lockMs } = this.policy;
    const member = `${now}-${process.pid}-${++this.sequence}`;
    try {
      const args = [now, windowMs, maxFailures, lockMs, member];
      const locked = await RECORD_FAILURE(this.redis, this.keys(subject), args);
      if (locked === 1) this.remember(subject, now, now + lockMs);
      return locked === 1;
    } catch (err) {
      this.logger.warn({ err, lockout: this.policy.name }, 'failure not recorded: redis unavailable');
      return false;
    }
  }
}

const CACHE_MS = 1000;
const STARTUP_WAIT_MS = 2000;
const STARTING = new Set(['wait', 'connecting', 'connect']);
const CACHE_ENTRIES = 10_000;

export const AUTH_LOCKOUT: LockoutPolicy = {
  name: 'auth',
  maxFailures: 20,
  windowMs: 5 * 60_000,
  lockMs: 15 * 60_000,
};
export const CARD_LOCKOUT: LockoutPolicy = {
  name: 'card',
  maxFailures: 10,
  windowMs: 10 * 60_000,
  lockMs: 30 * 60_000,
};
export const DASHBOARD_LOCKOUT: LockoutPolicy = {
  name: 'dashboard',
  maxFailures: 10,
  windowMs: 5 * 60_000,
  lockMs: 15 * 60_000,
};

/**
 * The client's address for lockouts: the socket's, or with TRUST_PROXY the first X-Forwarded-For entry that is
 * not a trusted proxy (Express's req.ip); an IPv4 address mapped into IPv6 counts as the IPv4 address.
 */
export function clientAddressOf(req: Request): string {
  const address = req.ip ?? req.socket.remoteAddress ?? 'unknown';
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}
