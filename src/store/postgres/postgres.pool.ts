import pg from 'pg';

/** What both a pool and a client checked out of it can run: a statement with positional parameters. */
export interface Queryable {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>>;
}

const INT8 = 20;
const INT8_ARRAY = 1016;
const NUMERIC = 1700;

const textParser = (oid: number): ((value: string) => unknown) =>
  pg.types.getTypeParser(oid, 'text') as (value: string) => unknown;

// Ids, cents and epoch milliseconds are stored as BIGINT and stay below 2^53: they read as JS numbers.
const parsers = new Map<number, (value: string) => unknown>([
  [INT8, Number],
  [NUMERIC, Number],
  [
    INT8_ARRAY,
    (value) => (textParser(INT8_ARRAY)(value) as (string | null)[]).map((v) => (v === null ? v : Number(v))),
  ],
]);

/** Type parsers of this adapter's clients only: the process-wide `pg.types` is left as it is. */
export const numberTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    (format !== 'binary' && parsers.get(oid)) ||
    pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

export interface PoolOptions {
  /** Connections per process (default 10). */
  poolSize?: number;
  /** Shown in pg_stat_activity, to tell the web, worker and clock processes apart. */
  applicationName?: string;
}

export function createPool(url: string, { poolSize = 10, applicationName }: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    types: numberTypes,
    // Every query of the service reads few rows by an index: starting parallel workers costs more (5–7 ms on a
    // search's p95) than it could save.
    options: '-c max_parallel_workers_per_gather=0',
    ...(applicationName ? { application_name: applicationName } : {}),
  });
  // An idle connection the server dropped is removed by the pool; the next query opens a new one.
  pool.on('error', () => undefined);
  return pool;
}

/**
 * Runs `fn` between BEGIN (READ COMMITTED) and COMMIT on one pooled client, rolling back when it throws.
 * `fn` runs only its own queries: nothing waits on the outside world while the transaction is open.
 */
export async function withTransaction<T>(pool: pg.Pool, fn: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    // A connection that cannot even roll back is closed rather than handed to the next caller.
    await client.query('ROLLBACK').catch((rollbackError: unknown) => {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    });
    throw err;
  } finally {
    client.release(broken);
  }
}
