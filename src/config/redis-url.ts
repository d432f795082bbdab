/** What a REDIS_URL names: one server, or the seed nodes of a Redis Cluster sharing one scheme and login. */
export interface RedisSeeds {
  nodes: { host: string; port: number }[];
  tls: boolean;
  username?: string;
  password?: string;
  db: number;
  /** Whether the URL carries `?options`, which only a single-server connection passes on to ioredis. */
  hasOptions: boolean;
}

/**
 * Splits `redis[s]://[user:password@]host[:port][,host[:port]…][/db][?options]` into its seed nodes; throws an
 * Error whose message says what is wrong (config.ts prefixes it with the variable's name).
 */
export function parseRedisUrl(url: string): RedisSeeds {
  const match = /^(rediss?:\/\/)([^/?#]*)(.*)$/i.exec(url);
  if (!match) throw new Error('must be a redis:// or rediss:// URL');
  if (/,\s*rediss?:\/\//i.test(url))
    throw new Error('names the scheme once for all hosts: redis://[user:password@]host:port,host:port');
  const [, scheme = '', authority = '', rest = ''] = match;
  // The last @ ends the login, so a password may hold @ or , unencoded.
  const at = authority.lastIndexOf('@');
  const login = authority.slice(0, at + 1);
  const hosts = authority.slice(at + 1).split(',');
  const parsed = hosts.map((host) => {
    try {
      const one = new URL(`${scheme}${login}${host}${rest}`);
      if (!one.hostname) throw new Error('no host');
      return one;
    } catch {
      throw new Error(`'${host}' is not a host or host:port`);
    }
  });
  const first = parsed[0]!;
  const db = first.pathname.length > 1 ? Number(first.pathname.slice(1)) : 0;
  if (!Number.isInteger(db) || db < 0) throw new Error(`'${first.pathname}' is not a database number`);
  return {
    nodes: parsed.map((one) => ({
      host: one.hostname.replace(/^\[|\]$/g, ''),
      port: one.port ? Number(one.port) : 6379,
    })),
    tls: scheme.toLowerCase() === 'rediss://',
    username: first.username ? decodeURIComponent(first.username) : undefined,
    password: first.password ? decodeURIComponent(first.password) : undefined,
    db,
    hasOptions: first.search.length > 1,
  };
}

/** `host:port,host:port,…` (REDIS_SENTINELS) as addresses; throws an Error saying what is wrong. */
export function parseSentinels(list: string): { host: string; port: number }[] {
  return list.split(',').map((entry) => {
    const one = entry.trim();
    const match = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/.exec(one);
    const port = Number(match?.[2]);
    if (!match || port < 1 || port > 65535) throw new Error(`'${one}' is not host:port`);
    return { host: match[1]!.replace(/^\[|\]$/g, ''), port };
  });
}
