import crypto from 'node:crypto';
import type { RedisClient } from './redis.js';

type Arg = string | number;

/**
 * A Lua script called by its SHA1 (EVALSHA): a call sends the keys and arguments, not the script's text, and
 * Redis does not hash that text again on every call as EVAL makes it. A server that does not know the script yet
 * (just started, flushed, another node of a cluster) answers NOSCRIPT; the call is then sent once with EVAL, which
 * also loads it for the next.
 */
export function luaScript(lua: string) {
  const sha = crypto.createHash('sha1').update(lua).digest('hex');
  return async (redis: RedisClient, keys: readonly string[], args: readonly Arg[]): Promise<unknown> => {
    try {
      return await redis.evalsha(sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(lua, keys.length, ...keys, ...args);
    }
  };
}
