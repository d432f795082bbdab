import type pg from 'pg';
import { parsePostgresHosts } from '../../config/postgres-url.js';
import type { Sealer } from '../../domain/secrets.js';
import { cursorKeyOf, SecretsKeyMismatchError, type StoreSecrets } from '../secrets/store-secrets.js';
import type { Store, StoreCounts } from '../port/store.port.js';
import { postgresCatalog } from './catalog.postgres.js';
import { openPostgresSecrets, postgresClients } from './clients.postgres.js';
import { postgresItems } from './items.postgres.js';
import { postgresLedger } from './ledger.postgres.js';
import { postgresOrders } from './orders.postgres.js';
import { postgresPayments } from './payments.postgres.js';
import { postgresProcessing } from './processing.postgres.js';
import { postgresReconcile } from './reconcile.postgres.js';
import { postgresSearch, type PostgresSearchOptions } from './search.postgres.js';
import { migratePostgres, pendingPostgresMigrations, POSTGRES_MIGRATIONS } from './postgres.migrations.js';
import { postgresMigrationSteps } from './migration-steps.postgres.js';
import { assertStepsDone, type MigrationOptions } from '../migration-options.js';
import { watchOutbox } from './outbox-watch.js';
import { postgresWebhooks } from './webhooks.postgres.js';
import { postgresRetention } from './retention.postgres.js';
import { createPool, DEFAULT_POOL_SIZE, type PoolOptions } from './postgres.pool.js';
import { clientShare, searchWithinShare } from './client-share.js';
import { backfillItemCounts, ITEMS_OF_ORDER } from './item-counts.postgres.js';

export type PostgresStoreOptions = PoolOptions &
  PostgresSearchOptions &
  MigrationOptions & {
    /** Seals the clients' secret keys; must be the key the database was first sealed or last rotated with. */
    sealer: Sealer;
    /** Where a session may LISTEN (never a transaction pooler); without it the relays poll. */
    listenUrl?: string | undefined;
    /** The fraction of the pool one client's searches may hold at once (client-share.ts); default 0.3. */
    clientShare?: number;
  };

/**
 * The store on the PostgreSQL database at `url`: a pool of `poolSize` connections (default 10), every
 * migration applied before it resolves. Many processes may open it at once. With `timeoutMs`, a statement the
 * database does not answer in time fails as the store being unavailable (postgres.pool.ts).
 */
export async function openPostgresStore(url: string, options: PostgresStoreOptions): Promise<Store> {
  const pool = createPool(url, options);
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => (closing ??= pool.end());
  // Migrations, and the look at which are pending, run on a connection of their own, closed after: migrations may
  // rightly take long (an index on a large table, another process's migration lock), so without a time-out; and a
  // connection opened before them lacks the role's settings that they set (a session takes them when it opens),
  // which the pool would otherwise keep.
  const onOwnConnection = async <T>(fn: (own: pg.Pool) => Promise<T>): Promise<T> => {
    const own = createPool(url, { ...options, poolSize: 1, timeoutMs: 0 });
    try {
      return await fn(own);
    } finally {
      await own.end();
    }
  };
  // Orders of an older version (before migration 16, or still running beside this one) then get their item count.
  const migrate = () => onOwnConnection((own) => migrateAndBackfill(own, options.sealer));
  let secrets: StoreSecrets;
  const steps = postgresMigrationSteps(pool, POSTGRES_MIGRATIONS, onOwnConnection);
  try {
    const pending = await onOwnConnection((own) => pendingPostgresMigrations(own));
    if (pending.length > 0) await options.gate?.('postgres', pending);
    await migrate();
    if (options.stepsDone) await assertStepsDone(steps);
    secrets = await openPostgresSecrets(pool, options.sealer);
  } catch (err) {
    await close();
    throw unreachable(url, err);
  }

  const counts = async (): Promise<StoreCounts> => {
    const [items, orders] = await Promise.all([
      pool.query<{ status: number; count: number }>(
        'SELECT status, count(*) AS count FROM order_items GROUP BY status ORDER BY status',
      ),
      pool.query<StoreCounts['unsettledByPhase'][number]>(
        `SELECT phase, count(*) AS count, coalesce(sum(${ITEMS_OF_ORDER}), 0) AS items FROM orders o
          WHERE NOT settled GROUP BY phase ORDER BY phase`,
      ),
    ]);
    return { itemsByStatus: items.rows, unsettledByPhase: orders.rows };
  };

  const { listenUrl } = options;
  const store: Store = {
    kind: 'postgres',
    clients: postgresClients(pool, secrets),
    catalog: postgresCatalog(pool),
    orders: postgresOrders(pool),
    processing: postgresProcessing(pool),
    items: postgresItems(pool),
    payments: postgresPayments(pool),
    ledger: postgresLedger(pool),
    reconcile: postgresReconcile(pool),
    search: searchWithinShare(
      postgresSearch(pool, cursorKeyOf(secrets), options),
      clientShare(options.poolSize ?? DEFAULT_POOL_SIZE, options.clientShare ?? 0.3, options.timeoutMs ?? 0),
    ),
    webhooks: {
      ...postgresWebhooks(pool, secrets),
      ...(listenUrl
        ? {
            watchOutbox: (onRecorded: () => void) =>
              watchOutbox(listenUrl, onRecorded, options.applicationName),
          }
        : {}),
    },
    retention: postgresRetention(pool),
    counts,
    migrate,
    schemaVersion: POSTGRES_MIGRATIONS.at(-1)!.version,
    steps,
    // Not ready when the store's secrets are no longer under this process's key (rotated since it started).
    async ping() {
      const { rows } = await pool.query<{ key_id: string }>('SELECT key_id FROM store_secrets WHERE id = 1');
      if (!options.sealer.opens(rows[0]?.key_id))
        throw new SecretsKeyMismatchError(options.sealer.keyId, rows[0]?.key_id);
    },
    async settings() {
      const { rows } = await pool.query<{ name: string; setting: string }>(
        'SELECT name, setting FROM pg_settings WHERE name = ANY($1)',
        [SESSION_SETTINGS],
      );
      return Object.fromEntries(rows.map((row) => [row.name, row.setting]));
    },
    close,
  };
  return store;
}

// Connection errors of node:net and the server's refusals at connection: the database named is not there for us.
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ECONNRESET',
]);
const REFUSED_AT_CONNECT = new Set(['3D000', '28000', '28P01']);

/**
 * A start that cannot reach or enter the database says it is DATABASE_URL's (its hosts and database, never its
 * password), as a bad value of any other variable is named; anything else is passed on as it is.
 */
function unreachable(url: string, err: unknown): unknown {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string' || !(UNREACHABLE.has(code) || REFUSED_AT_CONNECT.has(code))) return err;
  const hosts = parsePostgresHosts(url).hosts.map(({ host, port }) => `${host}:${port}`);
  const database = decodeURIComponent(url.replace(/^[^/]*\/\/[^/]*\//, '').split('?')[0] ?? '');
  // A refused connection to a name with several addresses is an AggregateError whose message is empty.
  const why = (err as Error).message || code;
  return new Error(`DATABASE_URL: cannot use database "${database}" at ${hosts.join(', ')}: ${why}`, {
    cause: err,
  });
}

/** What `settings()` reports: durability and the bounds of a session's waits. */
const SESSION_SETTINGS = [
  'synchronous_commit',
  'fsync',
  'statement_timeout',
  'idle_in_transaction_session_timeout',
  'tcp_keepalives_idle',
  'tcp_keepalives_interval',
  'tcp_keepalives_count',
];

async function migrateAndBackfill(pool: pg.Pool, sealer: Sealer): Promise<number[]> {
  const applied = await migratePostgres(pool, { sealer });
  await backfillItemCounts(pool);
  return applied;
}
