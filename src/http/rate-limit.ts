import type { RequestHandler } from 'express';
import type { RedisClient } from '../queue/redis.js';
import type { Logger } from '../logger.js';
import { ApiError } from './errors.js';
import { authOf } from './respond.js';
import { SvcStatus } from './status-codes.js';

// A token bucket per access key in one Redis hash, refilled from the caller's clock (all web processes of a
// deployment share a host clock or NTP): `capacity` tokens at most, `perMs` tokens added per millisecond.
// Returns {1, 0} when a token was taken, else {0, milliseconds until one will be there}.
const TAKE_TOKEN = `
local capacity = tonumber(ARGV[1])
local perMs = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
if now > at then
  tokens = math.min(capacity, tokens + (now - at) * perMs)
  at = now
end
local allowed, waitMs = 0, 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  waitMs = math.ceil((1 - tokens) / perMs)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(at))
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / perMs) + 1000)
return {allowed, waitMs}`;

export interface RateLimitOptions {
  redis: RedisClient;
  /** The service's hash-tagged key prefix, config.REDIS_PREFIX. */
  prefix: string;
  /** Sustained requests per second per access key; the burst is twice that (CONTRACT section 3). */
  perSecond: number;
  clock: () => number;
  logger: Logger;
}

export interface RateDecision {
  allowed: boolean;
  retryAfterMs: number;
}

/** Takes one token of the key's bucket; shared by every web process through Redis. */
export function createRateLimiter({ redis, prefix, perSecond, clock }: Omit<RateLimitOptions, 'logger'>) {
  const capacity = perSecond * 2;
  const perMs = perSecond / 1000;
  return async (accessKey: string): Promise<RateDecision> => {
    const key = `${prefix}:ratelimit:${accessKey}`;
    const [allowed, waitMs] = (await redis.eval(TAKE_TOKEN, 1, key, capacity, perMs, clock())) as [
      number,
      number,
    ];
    return { allowed: allowed === 1, retryAfterMs: waitMs };
  };
}

/**
 * 4291 with `Retry-After` (whole seconds, at least 1) once an access key has spent its bucket. Runs after
 * authentication, so only a key's owner can spend its budget. Fails open when Redis is unreachable: the
 * limit protects the service and should not be the reason every client is refused.
 */
export function rateLimit(options: RateLimitOptions): RequestHandler {
  const take = createRateLimiter(options);
  return async (_req, res, next) => {
    const { accessKey } = authOf(res);
    let decision: RateDecision;
    try {
      decision = await take(accessKey);
    } catch (err) {
      options.logger.warn({ err: (err as Error).message }, 'rate limit skipped: redis unavailable');
      return next();
    }
    if (decision.allowed) return next();
    const retryAfterS = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
    throw new ApiError(
      SvcStatus.RATE_LIMITED,
      `Svc-Access-Key: more than ${options.perSecond} requests per second; retry after ${retryAfterS} s`,
      { 'Retry-After': String(retryAfterS) },
    );
  };
}
