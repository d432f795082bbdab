import type { RedisClient } from './redis.js';
import { luaScript } from './lua-script.js';
import { groupCalls } from '../group-calls.js';

// A token bucket per access key in one Redis hash, refilled from the caller's clock (all web processes of a
// deployment share one: deps.clock, Redis's time): `capacity` tokens at most, `perMs` tokens added per ms.
// A request takes `cost` tokens; one that costs more than the whole bucket is let through when the bucket is
// full and leaves it in debt, so that the key's next requests wait until the debt is paid back. `paid`: tokens
// the same request took already (its cost charged in two steps), so that "full" still means full; past the
// bucket's capacity (OWED) the take is never refused: a cost known once the work is done (a page read), or given
// back (a negative cost: an order refused by backpressure). Never more than `capacity` tokens.
// Each key of KEYS is one request's, in the order asked (a key may come twice), with its `now`, `cost` and `paid`
// at ARGV[3i], ARGV[3i+1], ARGV[3i+2]; for each, in order, {1, 0} when the tokens were taken, else
// {0, milliseconds until enough will be there}, as one flat array.
// The key lives until its bucket is full again (then it is worth nothing), with a bucket's refill time to spare:
// its expiry is set only when the one set before would come too soon, and not on every take. `expires` holds that
// time and the `tokens` and `at` it was written with: a process that does not keep it (a previous release, which
// sets the expiry on every take, and a shorter one) leaves them out of step, and the expiry is set again.
const TAKE_TOKENS = luaScript(`
local capacity = tonumber(ARGV[1])
local perMs = tonumber(ARGV[2])
local out = {}
for i, key in ipairs(KEYS) do
  local now = tonumber(ARGV[3 * i])
  local cost = tonumber(ARGV[3 * i + 1])
  local paid = tonumber(ARGV[3 * i + 2])
  local state = redis.call('HMGET', key, 'tokens', 'at', 'expires')
  local tokens = tonumber(state[1]) or capacity
  local at = tonumber(state[2]) or now
  local expiresAt = nil
  if state[3] then
    local set, setTokens, setAt = string.match(state[3], '^(%d+)|([^|]*)|([^|]*)$')
    if setTokens == state[1] and setAt == state[2] then expiresAt = tonumber(set) end
  end
  if now > at then
    tokens = math.min(capacity, tokens + (now - at) * perMs)
    at = now
  end
  local need = math.min(cost, capacity - paid)
  local allowed, waitMs = 0, 0
  if tokens >= need then
    tokens = math.min(capacity, tokens - cost)
    allowed = 1
  else
    waitMs = math.ceil((need - tokens) / perMs)
  end
  local fullAt = now + math.ceil((capacity - math.min(tokens, 0)) / perMs) + 1000
  local extend = not expiresAt or expiresAt < fullAt
  if extend then expiresAt = fullAt + math.ceil(capacity / perMs) end
  local tokensText, atText = tostring(tokens), tostring(at)
  redis.call('HSET', key, 'tokens', tokensText, 'at', atText,
    'expires', string.format('%d', expiresAt) .. '|' .. tokensText .. '|' .. atText)
  if extend then redis.call('PEXPIRE', key, expiresAt - now) end
  out[2 * i - 1] = allowed
  out[2 * i] = waitMs
end
return out`);

/** Most requests' tokens taken in one call of the script; more wait for the next. */
const MAX_TAKES = 64;

export interface TokenBucketOptions {
  redis: RedisClient;
  /** The service's hash-tagged key prefix, config.REDIS_PREFIX. */
  prefix: string;
  /** Sustained requests per second per access key; the burst is twice that (docs/api.md#limits). */
  perSecond: number;
  clock: () => number;
}

export interface RateDecision {
  allowed: boolean;
  retryAfterMs: number;
}

interface Take {
  accessKey: string;
  cost: number;
  paid: number;
  now: number;
}

/**
 * Takes `cost` tokens (one by default) of the key's bucket, of a request that paid `paid` already; shared by
 * every web process through Redis. The takes asked for in one turn of the event loop (requests that arrived
 * together) go to Redis as one call of the script, each taken in the order asked and answered on its own;
 * should the call fail, each take fails with its error (and the limit fails open for it): an error midway does
 * not undo what the script took before it, so a take retried alone could be charged twice.
 */
export function createRateLimiter({ redis, prefix, perSecond, clock }: TokenBucketOptions) {
  const capacity = perSecond * 2;
  const perMs = perSecond / 1000;
  const takeTogether = groupCalls(
    async (takes: readonly Take[]): Promise<RateDecision[]> => {
      const keys = takes.map((take) => `${prefix}:ratelimit:${take.accessKey}`);
      const args = [capacity, perMs, ...takes.flatMap(({ now, cost, paid }) => [now, cost, paid])];
      const answers = (await TAKE_TOKENS(redis, keys, args)) as number[];
      return takes.map((_, i) => ({ allowed: answers[2 * i] === 1, retryAfterMs: answers[2 * i + 1]! }));
    },
    MAX_TAKES,
    { retryAlone: false },
  );
  return (accessKey: string, cost = 1, paid = 0): Promise<RateDecision> =>
    takeTogether({ accessKey, cost, paid, now: clock() });
}

/** `paid` for a take that is never refused: more than any bucket holds (see TAKE_TOKENS). */
export const OWED = Number.MAX_SAFE_INTEGER;
