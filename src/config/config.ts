import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import cron from 'node-cron';
import { z } from 'zod';
import { parseSecretsKey } from './secrets-key-format.js';
import { parseRedisUrl, parseSentinels, type RedisSeeds } from './redis-url.js';
import { parsePostgresHosts } from './postgres-url.js';

const positiveInt = z.coerce.number().int().positive();
const nonNegativeInt = z.coerce.number().int().nonnegative();

// One host, or several in libpq's form (postgres://USER@H1:PORT,H2:PORT/DB?target_session_attrs=read-write).
const postgresUrl = z
  .string()
  .regex(/^postgres(ql)?:\/\/[^/]+\/[^/?]+/, 'must be a postgres://USER[:PASSWORD]@HOST:PORT/DB URL')
  .superRefine((url, ctx) => {
    try {
      parsePostgresHosts(url);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
    }
  });

const secretsKey = z
  .string()
  .superRefine((key, ctx) => {
    try {
      parseSecretsKey(key);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
    }
  })
  .optional();

const ConfigSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  // The address the web listens on; unset, every interface (`npm start` sets 127.0.0.1).
  HOST: z.string().min(1).optional(),
  // GET /metrics is served on its own listener, never on PORT (docs/api.md#endpoints); 0 picks a free port.
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  // A /metrics text collected less than this ago is served again: scrapers in a loop cost one collection each.
  METRICS_REUSE_MS: nonNegativeInt.max(60_000).default(1000),
  // How often the clock counts items by status and orders by phase for /metrics (one count per deployment).
  STORE_COUNTS_EVERY_S: positiveInt.max(3600).default(5),
  DB_PATH: z.string().min(1).default('./data/orders.db'),
  DATABASE_URL: postgresUrl.optional(),
  // What DATABASE_URL reaches: the server (direct), or a pooler in session or transaction mode
  // (docs/operating.md, PostgreSQL and PgBouncer).
  DATABASE_POOLING: z.enum(['direct', 'session', 'transaction']).default('direct'),
  // The same database reached without a transaction pooler, for whatever needs a session (LISTEN).
  DATABASE_DIRECT_URL: postgresUrl.optional(),
  DB_POOL_SIZE: positiveInt.default(10),
  // PostgreSQL: the fraction of a process's DB_POOL_SIZE connections one client's searches may hold at once (at
  // least one); all clients' searches together leave that many to everything else (docs/configuration.md).
  DB_POOL_CLIENT_SHARE: z.coerce.number().gt(0).max(1).default(0.3),
  // PostgreSQL: how long a statement, or getting a connection, waits for the database before it fails as
  // unavailable (the web answers 503 5030, a worker tries the job again later); 0 waits as long as it takes.
  // SQLite: how long a web search that the plan cannot bound waits for the search thread, then runs on it.
  DATABASE_TIMEOUT_MS: nonNegativeInt.max(600_000).default(5000),
  // How long a web request waits for another process's SQLite write lock (between turns of the event loop, so
  // that other requests go on) before it is answered 503 5030 with Retry-After; other processes wait up to 10 s.
  WEB_DB_BUSY_TIMEOUT_MS: nonNegativeInt.max(10_000).default(2000),
  SECRETS_KEY: secretsKey,
  // During a rotation: the key before SECRETS_KEY, which still opens what it sealed (docs/api.md#operations).
  SECRETS_KEY_PREVIOUS: secretsKey,
  REDIS_URL: z
    .string()
    .superRefine((url, ctx) => {
      const problem = redisUrlProblem(url);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .default('redis://127.0.0.1:6379'),
  REDIS_CLUSTER: z
    .enum(['true', 'false', '1', '0', ''])
    .default('')
    .transform((v) => v === 'true' || v === '1'),
  // Redis behind Sentinel: the Sentinels' host:port list and the master's name replace REDIS_URL's host (its login,
  // database and TLS still apply to the master); REDIS_SENTINEL_PASSWORD is the Sentinels' own, if they have one.
  REDIS_SENTINELS: z
    .string()
    .superRefine((list, ctx) => {
      try {
        parseSentinels(list);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: `${(err as Error).message}: host:port,host:port,…` });
      }
    })
    .optional(),
  REDIS_SENTINEL_MASTER: z.string().min(1).optional(),
  REDIS_SENTINEL_PASSWORD: z.string().min(1).optional(),
  QUEUE_PREFIX: z
    .string()
    .regex(/^[^{}:]*$/, 'must not hold {, } or : (the service wraps it in a Redis hash tag itself)')
    .regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, - and _ only')
    .default('bookorders'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_PRETTY: z.enum(['auto', 'true', 'false']).default('auto'),
  ORDER_WAIT_MS: nonNegativeInt.default(10_000),
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  // On SIGTERM a web answers /readyz 503 and every answer with `Connection: close` for this long, serving as
  // before, so that a balancer stops sending it connections before it stops listening (docs/operating.md).
  SHUTDOWN_DRAIN_MS: nonNegativeInt.max(10_000).default(5000),
  MARKETPLACE_NAMES: z
    .string()
    .regex(
      /^[a-z0-9-]+,[a-z0-9-]+,[a-z0-9-]+$/,
      'three comma-separated names of lowercase letters, digits, -',
    )
    .default('bookmarket,libromercado,buchmarkt'),
  AUTH_MAX_SKEW_S: positiveInt.default(300),
  RATE_LIMIT_PER_S: nonNegativeInt.default(200),
  // Batches of one client in flight at once in one web process; one more is 4291.
  BATCH_CONCURRENCY_PER_CLIENT: positiveInt.default(2),
  // Searches of one client in flight at once in one web process; one more is 4291.
  SEARCH_CONCURRENCY_PER_CLIENT: positiveInt.default(2),
  WORKER_CONCURRENCY: positiveInt.default(32),
  WEB_CONCURRENCY: positiveInt.default(1),
  MAX_PROCESS_ATTEMPTS: positiveInt.default(5),
  ATTEMPT_LEASE_S: positiveInt.default(60),
  QUEUED_STALE_AFTER_S: positiveInt.default(120),
  SHIP_DEADLINE_H: positiveInt.default(96),
  EXTRA_SHIPPING_TIMEOUT_H: positiveInt.default(48),
  RECONCILE_CRON: z
    .string()
    .min(1)
    .refine((expression) => cron.validate(expression), 'is not a cron expression (e.g. "* * * * *")')
    .default('* * * * *'),
  // docs/api.md#operations: order events and finished webhook deliveries older than this are deleted by the clock.
  EVENT_RETENTION_DAYS: positiveInt.max(3650).default(30),
  RETENTION_CRON: z
    .string()
    .min(1)
    .refine((expression) => cron.validate(expression), 'is not a cron expression (e.g. "*/10 * * * *")')
    .default('*/10 * * * *'),
  SANDBOX_PAYMENT_LATENCY_MS: nonNegativeInt.default(0),
  // docs/api.md#backpressure: past this many items of unsettled orders, real orders are refused with 5030.
  MAX_UNSETTLED_ORDERS: positiveInt.default(50_000),
  // One client's share of that backlog: past it only that client's real orders are refused (default a tenth).
  MAX_UNSETTLED_PER_CLIENT: positiveInt.optional(),
  WEBHOOK_ALLOW_PRIVATE: z
    .enum(['true', 'false', '1', '0', ''])
    .default('')
    .transform((v) => v === 'true' || v === '1'),
  WEBHOOK_RETRY_BASE_MS: positiveInt.default(1000),
  WEBHOOK_MAX_ATTEMPTS: positiveInt.max(100).default(15),
  // docs/api.md#webhooks gives a receiver 10 s; tests lower it.
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(10_000).default(10_000),
  WEBHOOK_CONCURRENCY: positiveInt.default(32),
  // Fair delivery, so that one client's slow or failing receiver never holds another's events: one endpoint's
  // attempts at once across every worker, how long a connection may take, and the circuit breaker (consecutive failures that pause an endpoint; the first pause, doubling, at most 1 h).
  WEBHOOK_CONCURRENCY_PER_ENDPOINT: positiveInt.default(4),
  WEBHOOK_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(10_000).default(3000),
  WEBHOOK_BREAKER_FAILURES: positiveInt.default(5),
  WEBHOOK_BREAKER_PAUSE_MS: positiveInt.default(30_000),
  // One client's endpoints together: attempts at once in one worker process (default a quarter of
  // WEBHOOK_CONCURRENCY), and the answer time past which a receiver counts for the breaker as a failing one.
  WEBHOOK_CONCURRENCY_PER_CLIENT: positiveInt.optional(),
  WEBHOOK_SLOW_MS: positiveInt.default(5000),
  // Which proxies' X-Forwarded-For entries to believe: off, `true` (any: the client may forge its address), or
  // the proxies' addresses, CIDR ranges and `loopback`, `linklocal`, `uniquelocal` (Express's trust proxy).
  TRUST_PROXY: z
    .string()
    .default('')
    .transform((v): boolean | string[] =>
      ['true', '1'].includes(v)
        ? true
        : ['false', '0', ''].includes(v)
          ? false
          : v.split(',').map((p) => p.trim()),
    )
    .refine(
      (v) => typeof v === 'boolean' || v.every((p) => PROXY_NAMES.has(p) || isProxyAddress(p)),
      'true, false, or comma-separated addresses, CIDR ranges, loopback, linklocal or uniquelocal',
    ),
  ADMIN_USER: z.string().optional(),
  ADMIN_PASSWORD: z.string().optional(),
});

const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

function isProxyAddress(value: string): boolean {
  const [address = '', bits, ...rest] = value.split('/');
  const family = net.isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

/** Why REDIS_URL cannot name one server, or with `cluster` (REDIS_CLUSTER=true) the seed nodes of a cluster. */
function redisUrlProblem(url: string, cluster?: boolean): string | undefined {
  let seeds: RedisSeeds;
  try {
    seeds = parseRedisUrl(url);
  } catch (err) {
    return (err as Error).message;
  }
  if (cluster === false && seeds.nodes.length > 1)
    return 'names several hosts: set REDIS_CLUSTER=true for a Redis Cluster, or name one server';
  if (cluster && seeds.db !== 0) return 'a Redis Cluster has only database 0 (REDIS_CLUSTER=true)';
  if (cluster && seeds.hasOptions) return '?options are not supported with REDIS_CLUSTER=true';
  return undefined;
}

/** What is wrong with the REDIS_SENTINEL* settings, naming the variable. */
function redisSentinelProblem(config: {
  REDIS_SENTINELS?: string;
  REDIS_SENTINEL_MASTER?: string;
  REDIS_SENTINEL_PASSWORD?: string;
  REDIS_CLUSTER: boolean;
}): string | undefined {
  if (!config.REDIS_SENTINELS) {
    if (config.REDIS_SENTINEL_MASTER) return 'REDIS_SENTINEL_MASTER: only with REDIS_SENTINELS';
    if (config.REDIS_SENTINEL_PASSWORD) return 'REDIS_SENTINEL_PASSWORD: only with REDIS_SENTINELS';
    return undefined;
  }
  if (!config.REDIS_SENTINEL_MASTER)
    return 'REDIS_SENTINEL_MASTER: required with REDIS_SENTINELS (the master name the Sentinels monitor)';
  if (config.REDIS_CLUSTER)
    return 'REDIS_SENTINELS: not with REDIS_CLUSTER=true (a cluster fails over by itself)';
  return undefined;
}

/** What is wrong with DATABASE_POOLING and DATABASE_DIRECT_URL given DATABASE_URL, naming the variable. */
function databaseUrlsProblem(config: {
  DATABASE_URL?: string;
  DATABASE_POOLING: string;
  DATABASE_DIRECT_URL?: string;
}): string | undefined {
  const { DATABASE_URL: url, DATABASE_POOLING: pooling, DATABASE_DIRECT_URL: direct } = config;
  if (!url && pooling !== 'direct') return 'DATABASE_POOLING: only with DATABASE_URL';
  if (!direct) return undefined;
  if (!url) return 'DATABASE_DIRECT_URL: only with DATABASE_URL';
  // A URL of one of its hosts: what WHATWG's URL reads (it refuses a list of hosts).
  const one = (u: string) => {
    const target = parsePostgresHosts(u);
    return new URL(target.urlOf(target.hosts[0]!));
  };
  const database = (u: string) => decodeURIComponent(one(u).pathname.slice(1));
  if (database(direct) !== database(url))
    return `DATABASE_DIRECT_URL: must name DATABASE_URL's database (${database(url)}), not ${database(direct)}`;
  if (pooling === 'transaction' && one(direct).host === one(url).host)
    return 'DATABASE_DIRECT_URL: reaches the same host and port as DATABASE_URL, the transaction pooler: give the server';
  return undefined;
}

export type Config = Omit<z.infer<typeof ConfigSchema>, 'MAX_UNSETTLED_PER_CLIENT'> & {
  MAX_UNSETTLED_PER_CLIENT: number;
  marketplaceNames: [string, string, string];
  /** `{QUEUE_PREFIX}`: every Redis key of the service starts with it, so all share one Redis Cluster slot. */
  REDIS_PREFIX: string;
};

export class ConfigError extends Error {}

/** The validation library's message, but a readable one for a value that is not a number. */
function issueMessage(issue: z.core.$ZodIssue, value: string | undefined): string {
  if (issue.code === 'invalid_type' && issue.expected === 'number')
    return `must be a number, got '${value ?? ''}'`;
  return issue.message;
}

/** Parses the environment once; throws a ConfigError naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const picked = Object.fromEntries(
    Object.keys(ConfigSchema.shape).map((key) => [key, env[key] === '' ? undefined : env[key]]),
  );
  const parsed = ConfigSchema.safeParse(picked);
  if (!parsed.success) {
    // One line per variable: a value can fail a check and the refinement after it with the same complaint.
    const lines = new Map<string, string>();
    for (const issue of parsed.error.issues) {
      const name = issue.path.join('.');
      if (!lines.has(name)) lines.set(name, `${name}: ${issueMessage(issue, picked[name])}`);
    }
    throw new ConfigError(`invalid configuration:\n  ${[...lines.values()].join('\n  ')}`);
  }
  const redisProblem = redisUrlProblem(parsed.data.REDIS_URL, parsed.data.REDIS_CLUSTER);
  if (redisProblem) throw new ConfigError(`invalid configuration:\n  REDIS_URL: ${redisProblem}`);
  const sentinelProblem = redisSentinelProblem(parsed.data);
  if (sentinelProblem) throw new ConfigError(`invalid configuration:\n  ${sentinelProblem}`);
  // A key file per host, as SQLite's default, would give every host its own key to one shared database.
  if (parsed.data.DATABASE_URL && !parsed.data.SECRETS_KEY) {
    throw new ConfigError(
      'invalid configuration:\n  SECRETS_KEY: required with DATABASE_URL, the same on every host (e.g. `openssl rand -hex 32`)',
    );
  }
  // Checked before anything listens: the second listener would otherwise die at start naming only its port.
  const { PORT: port, METRICS_PORT: metricsPort } = parsed.data;
  if (port !== 0 && metricsPort === port) {
    throw new ConfigError(
      `invalid configuration:\n  METRICS_PORT and PORT: both ${port}; /metrics has a listener of its own: set METRICS_PORT to another port (0: a free one)`,
    );
  }
  const databaseProblem = databaseUrlsProblem(parsed.data);
  if (databaseProblem) throw new ConfigError(`invalid configuration:\n  ${databaseProblem}`);
  if (Boolean(parsed.data.ADMIN_USER) !== Boolean(parsed.data.ADMIN_PASSWORD)) {
    throw new ConfigError('invalid configuration:\n  ADMIN_USER and ADMIN_PASSWORD must be set together');
  }
  const names = parsed.data.MARKETPLACE_NAMES.split(',') as [string, string, string];
  const perClient =
    parsed.data.MAX_UNSETTLED_PER_CLIENT ?? Math.max(1, Math.floor(parsed.data.MAX_UNSETTLED_ORDERS / 10));
  return {
    ...parsed.data,
    MAX_UNSETTLED_PER_CLIENT: perClient,
    marketplaceNames: names,
    REDIS_PREFIX: `{${parsed.data.QUEUE_PREFIX}}`,
  };
}

/**
 * For the processes and commands (not for tests and benchmarks, which give folders of their own): a SQLite
 * DB_PATH whose folder does not exist is a typo that would otherwise start a new, empty store with a new
 * secrets.key. Only the default's folder, `data` of the working directory, is created when missing.
 */
export function assertDataFolder(
  config: Pick<Config, 'DATABASE_URL' | 'DB_PATH'>,
  cwd = process.cwd(),
): void {
  if (config.DATABASE_URL || config.DB_PATH === ':memory:') return;
  const folder = path.dirname(path.resolve(cwd, config.DB_PATH));
  if (folder === path.resolve(cwd, 'data') || fs.existsSync(folder)) return;
  throw new ConfigError(
    `invalid configuration:\n  DB_PATH: the folder ${folder} does not exist: create it (mkdir -p) to start a new store there`,
  );
}
