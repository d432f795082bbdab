import type { RedisClient } from './redis.js';
import { luaScript } from './lua-script.js';

/**
 * Fair webhook delivery across every worker process, kept in Redis: each endpoint (webhook) may have at most
 * `perEndpoint` attempts under way at once, and an endpoint that fails `breakerFailures` attempts in a row is
 * paused (its circuit opened) for `pauseMs`, twice as long after each pause that ends in a failure again (at most
 * `maxPauseMs`). An attempt that may not start now is told how long to wait, so its job waits delayed in the
 * queue and holds no worker slot.
 */
export interface EndpointGate {
  /**
   * Takes a slot of the endpoint. While its slots are taken by attempts that answer (none older than a second, no
   * failure lately), waits up to `patienceMs` for one of them to end, woken at once when one ends in this process.
   */
  enter(webhookId: number, patienceMs?: number): Promise<GateEntry>;
  /**
   * Frees the slot; `result` feeds the breaker ('none': nothing was sent; 'slow': delivered, but later than a slow
   * answer, which the breaker counts as a failure). Returns the pause it opened, or 0.
   */
  leave(webhookId: number, token: string, result: AttemptResult): Promise<number>;
}

export type GateEntry =
  | { kind: 'enter'; token: string }
  /**
   * Its endpoint has all its slots taken. slow: its last attempt failed, or one under way has taken more than a
   * second: its slots may stay taken up to a time-out.
   */
  | { kind: 'busy'; slow: boolean }
  /** Its endpoint's circuit is open. */
  | { kind: 'paused'; waitMs: number };

export type AttemptResult = 'ok' | 'slow' | 'failed' | 'none';

export interface EndpointGateOptions {
  redis: RedisClient;
  /** The service's hash-tagged key prefix, config.REDIS_PREFIX: both keys of an endpoint share its slot. */
  prefix: string;
  perEndpoint: number;
  /** How long a slot stays taken if its worker dies before leaving it: longer than any attempt. */
  holdMs: number;
  breakerFailures: number;
  pauseMs: number;
  maxPauseMs: number;
  clock: () => number;
}

// KEYS: the endpoint's slots (a sorted set of holders by expiry) and its breaker (a hash). ARGV: now, the limit,
// how long a slot is held at most, the holder's token, how long an attempt under way makes the endpoint slow.
// Returns {1, 0} when a slot was taken, {2, ms} while the circuit is open, {3, 1 when slow else 0} when every slot
// is taken (slow: a failure in a row so far, or a holder that took its slot longer ago than that).
const ENTER = luaScript(`
local now = tonumber(ARGV[1])
local openUntil = tonumber(redis.call('HGET', KEYS[2], 'openUntil') or '0')
if openUntil > now then return {2, openUntil - now} end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  if tonumber(redis.call('HGET', KEYS[2], 'failures') or '0') > 0 then return {3, 1} end
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local takenAt = tonumber(oldest[2]) - tonumber(ARGV[3])
  if now - takenAt > tonumber(ARGV[5]) then return {3, 1} end
  return {3, 0}
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[4])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return {1, 0}`);

// KEYS as ENTER. ARGV: now, the holder's token, 'ok' | 'slow' | 'failed' | 'none' (slow counts as failed), failures that open the circuit, first
// pause, longest pause, how long the breaker is remembered. A success closes the circuit and forgets the count;
// a failure while the circuit is open (an attempt that started before it opened) is not counted. After a pause
// the count stands one short of opening, so the first attempt that fails again opens it for twice as long.
// Returns the pause opened, or 0.
const LEAVE = luaScript(`
local now = tonumber(ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[2])
if ARGV[3] == 'ok' then
  redis.call('DEL', KEYS[2])
  return 0
end
if ARGV[3] ~= 'failed' and ARGV[3] ~= 'slow' then return 0 end
local openUntil = tonumber(redis.call('HGET', KEYS[2], 'openUntil') or '0')
if openUntil > now then return 0 end
local threshold = tonumber(ARGV[4])
local failures = redis.call('HINCRBY', KEYS[2], 'failures', 1)
redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[7]))
if failures < threshold then return 0 end
local pauses = redis.call('HINCRBY', KEYS[2], 'pauses', 1)
local pause = math.floor(math.min(tonumber(ARGV[5]) * 2 ^ math.min(pauses - 1, 32), tonumber(ARGV[6])))
redis.call('HSET', KEYS[2], 'openUntil', now + pause, 'failures', threshold - 1)
return pause`);

const DAY_MS = 86_400_000;
/** An attempt under way longer than this makes its endpoint slow: others wait in the queue, not in a slot. */
const SLOW_AFTER_MS = 1000;
/** How often a patient attempt asks again when no attempt of this process ends meanwhile. */
const RETRY_ENTER_MS = 100;

export function createEndpointGate(options: EndpointGateOptions): EndpointGate {
  const { redis, prefix, clock } = options;
  const keys = (webhookId: number) => [
    `${prefix}:webhook-slots:${webhookId}`,
    `${prefix}:webhook-breaker:${webhookId}`,
  ];
  // Patient attempts of this process, by endpoint: a slot freed here wakes the first.
  const waiting = new Map<number, Set<() => void>>();
  const slotFreed = (webhookId: number, ms: number) =>
    new Promise<void>((resolve) => {
      const set = waiting.get(webhookId) ?? new Set();
      waiting.set(webhookId, set);
      const done = () => {
        clearTimeout(timer);
        set.delete(done);
        if (set.size === 0) waiting.delete(webhookId);
        resolve();
      };
      const timer = setTimeout(done, ms);
      set.add(done);
    });
  let sequence = 0;
  const tryEnter = async (webhookId: number): Promise<GateEntry> => {
    const token = `${process.pid}-${Date.now()}-${(sequence += 1)}`;
    const args = [clock(), options.perEndpoint, options.holdMs, token, SLOW_AFTER_MS];
    const [kind, n] = (await ENTER(redis, keys(webhookId), args)) as [number, number];
    if (kind === 1) return { kind: 'enter', token };
    return kind === 2 ? { kind: 'paused', waitMs: Math.max(0, n) } : { kind: 'busy', slow: n === 1 };
  };
  return {
    async enter(webhookId, patienceMs = 0) {
      const giveUpAt = performance.now() + patienceMs;
      for (;;) {
        const entry = await tryEnter(webhookId);
        const left = giveUpAt - performance.now();
        if (entry.kind !== 'busy' || entry.slow || left <= 0) return entry;
        await slotFreed(webhookId, Math.min(left, RETRY_ENTER_MS));
      }
    },
    async leave(webhookId, token, result) {
      const { breakerFailures, pauseMs, maxPauseMs } = options;
      const remember = Math.max(DAY_MS, maxPauseMs * 2);
      const args = [clock(), token, result, breakerFailures, pauseMs, maxPauseMs, remember];
      const paused = (await LEAVE(redis, keys(webhookId), args)) as number;
      const [first] = waiting.get(webhookId) ?? [];
      first?.();
      return paused;
    },
  };
}
