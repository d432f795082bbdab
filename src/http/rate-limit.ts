import type { RequestHandler, Response } from 'express';
import type { RedisClient } from '../redis/redis.js';
import type { Logger } from '../logger.js';
import { ApiError } from './errors.js';
import { authOf } from './respond.js';
import { SvcStatus } from './status-codes.js';
import { luaScript } from '../redis/lua-script.js';
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

export interface RateLimitOptions {
  redis: RedisClient;
  /** The service's hash-tagged key prefix, config.REDIS_PREFIX. */
  prefix: string;
  /** Sustained requests per second per access key; the burst is twice that (docs/api.md#limits). */
  perSecond: number;
  clock: () => number;
  logger: Logger;
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
export function createRateLimiter({ redis, prefix, perSecond, clock }: Omit<RateLimitOptions, 'logger'>) {
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
const OWED = Number.MAX_SAFE_INTEGER;

/** What a request may be charged beyond the token it paid on arrival, by the rate limit of its key. */
interface Charges {
  /** `tokens` more; 4291 naming `what` when the key's bucket refuses. */
  more(tokens: number, what: string): Promise<void>;
  /** `tokens` more whatever the bucket holds (in debt if need be), or given back when negative. */
  owed(tokens: number): Promise<void>;
}
const CHARGES = Symbol('rate limit charges');
const chargesOf = (res: Response) => (res.locals as { [CHARGES]?: Charges })[CHARGES];

/**
 * For a request whose cost is known only once its body is read (a batch: by its orders and their listings):
 * takes `tokens` more from the key's bucket, or throws 4291 naming `what` cost them. Nothing when the rate
 * limit is off.
 */
export async function chargeMore(res: Response, tokens: number, what: string): Promise<void> {
  const charges = chargesOf(res);
  if (charges && tokens > 0) await charges.more(tokens, what);
}

/**
 * For a request whose cost is known only once its work is done (a page read: by its items): takes `tokens` more
 * from the key's bucket whatever it holds, leaving it in debt that the key's next requests wait out. Never
 * refuses: the work is done, and the answer is sent. Nothing when the rate limit is off.
 */
export async function chargeOwed(res: Response, tokens: number): Promise<void> {
  const charges = chargesOf(res);
  if (charges && tokens > 0) await charges.owed(tokens);
}

/**
 * Gives back `tokens` this request was charged for work it then did not do (orders refused by backpressure),
 * never filling the key's bucket past full. Nothing when the rate limit is off.
 */
export async function giveBack(res: Response, tokens: number): Promise<void> {
  const charges = chargesOf(res);
  if (charges && tokens > 0) await charges.owed(-tokens);
}

/** Keys remembered as refused at once (see rateLimit); past this many, the longest remembered is forgotten. */
const MAX_REFUSED_KEYS = 10_000;

/**
 * 4291 with `Retry-After` (whole seconds, at least 1) once an access key has spent its bucket. Runs after
 * authentication, so only a key's owner can spend its budget. Fails open when Redis is unreachable: the
 * limit protects the service and should not be the reason every client is refused.
 *
 * A key refused on arrival is refused again by this process, without asking Redis, until its bucket holds a
 * token again: processes add tokens only by giving back what a request of theirs was charged (giveBack, which
 * forgets the key here; the refill follows the clock that the bucket already takes the processes to share), so
 * until then Redis would refuse it too, and a caller sending in a loop past its
 * limit costs Redis nothing more. The time is the one Redis gave less its rounding up (1 ms), counted from this
 * process's clock read before asking: a key is never refused here longer than Redis would refuse it.
 */
export function rateLimit(options: RateLimitOptions): RequestHandler {
  const take = createRateLimiter(options);
  const refusedUntil = new Map<string, number>();
  const refusal = (retryAfterMs: number, what?: string) => {
    const retryAfterS = Math.max(1, Math.ceil(retryAfterMs / 1000));
    return new ApiError(
      SvcStatus.RATE_LIMITED,
      `Svc-Access-Key: ${what ?? `more than ${options.perSecond} requests per second`}; retry after ${retryAfterS} s`,
      { 'Retry-After': String(retryAfterS) },
    );
  };
  const spend = async (accessKey: string, cost: number, paid: number, what?: string) => {
    const asked = options.clock();
    let decision: RateDecision;
    try {
      decision = await take(accessKey, cost, paid);
    } catch (err) {
      options.logger.warn({ err: (err as Error).message }, 'rate limit skipped: redis unavailable');
      return;
    }
    if (decision.allowed) return;
    // A one-token request's wait is the time until the bucket holds one token: what any request needs.
    if (cost === 1 && paid === 0) {
      refusedUntil.delete(accessKey);
      if (refusedUntil.size >= MAX_REFUSED_KEYS) refusedUntil.delete(refusedUntil.keys().next().value!);
      refusedUntil.set(accessKey, asked + decision.retryAfterMs - 1);
    }
    throw refusal(decision.retryAfterMs, what);
  };
  /** Throws 4291 while `accessKey` is remembered as refused; forgets it once its time has passed. */
  const stillRefused = (accessKey: string) => {
    const until = refusedUntil.get(accessKey);
    if (until === undefined) return;
    const waitMs = until - options.clock();
    if (waitMs > 0) throw refusal(waitMs);
    refusedUntil.delete(accessKey);
  };
  return async (_req, res, next) => {
    const { accessKey } = authOf(res);
    stillRefused(accessKey);
    await spend(accessKey, 1, 0);
    const charges: Charges = {
      more: (tokens, what) =>
        spend(accessKey, tokens, 1, `${what}, more than ${options.perSecond} requests per second allow now`),
      owed: async (tokens) => {
        // Tokens given back may let the key in before the time remembered: forget it.
        if (tokens < 0) refusedUntil.delete(accessKey);
        await spend(accessKey, tokens, OWED);
      },
    };
    (res.locals as { [CHARGES]?: Charges })[CHARGES] = charges;
    next();
  };
}
