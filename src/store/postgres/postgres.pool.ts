import pg from 'pg';
import { isStoreUnavailable } from '../store-errors.js';
import { firstHostUrl, targetedClient } from './postgres-hosts.js';
import { clientClass, failFastWhenUnanswering, newHealth } from './store-client.js';

export { FIXED_RESULT, PLAN_EACH_CALL, StoreTimeoutError } from './store-client.js';

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

/**
 * What DATABASE_URL reaches (DATABASE_POOLING): the server itself, or a pooler that keeps a server connection per
 * client connection (session), or one that hands a server connection out per transaction (transaction).
 */
export type Pooling = 'direct' | 'session' | 'transaction';

export interface PoolOptions {
  /** Connections per process (default DEFAULT_POOL_SIZE). */
  poolSize?: number;
  /** Shown in pg_stat_activity, to tell the web, worker and clock processes apart. */
  applicationName?: string;
  /**
   * 'transaction': behind a transaction pooler, consecutive transactions of one connection run on different server
   * connections, so no statement is named (prepared) per connection. Otherwise each is prepared once (default).
   */
  pooling?: Pooling;
  /**
   * How long a statement, or getting a connection, may wait for the database before it fails as unavailable
   * (StoreTimeoutError, or node-postgres' connection timeout); 0 (default): as long as it takes.
   */
  timeoutMs?: number;
}

export const DEFAULT_POOL_SIZE = 10;

/** How long opening a connection may take when nothing else bounds it. */
export const CONNECT_TIMEOUT_MS = 10_000;
/** TCP keepalive of every connection to PostgreSQL, probing from 5 s of silence. */
export const KEEPALIVE = { keepAlive: true, keepAliveInitialDelayMillis: 5000 } as const;

/**
 * A pool of `poolSize` connections. Through a pooler it sends no startup option (a transaction pooler refuses
 * them, PgBouncer with "unsupported startup parameter: options"), and straight to the server only
 * statement_timeout: what the service needs of the server's settings is set on its
 * role in its database by a migration (settings.migration.ts), and nothing it does depends on session
 * state between transactions.
 */
export function createPool(
  url: string,
  { poolSize = DEFAULT_POOL_SIZE, applicationName, pooling = 'direct', timeoutMs = 0 }: PoolOptions = {},
): pg.Pool {
  const prepare = pooling !== 'transaction';
  const health = newHealth();
  const pool = new pg.Pool({
    // The host of DATABASE_URL's that will do (postgres-hosts.ts).
    Client: targetedClient(
      url,
      prepare || timeoutMs > 0 ? clientClass(prepare, timeoutMs, health) : pg.Client,
      timeoutMs,
    ),
    connectionString: firstHostUrl(url),
    max: poolSize,
    // Connecting is bounded even where statements are not (migrations, the admin CLI), and TCP keepalive from
    // 5 s of silence lets the kernel notice a dead peer of an idle connection (docs/operating.md, "Time-outs").
    connectionTimeoutMillis: timeoutMs > 0 ? timeoutMs : CONNECT_TIMEOUT_MS,
    ...KEEPALIVE,
    // Straight to the server, the server itself ends a statement after as long as the service waits for it: the
    // one startup option sent, and only there (a pooler refuses it; the cancel request above bounds it there).
    ...(timeoutMs > 0 && pooling === 'direct' ? { statement_timeout: timeoutMs } : {}),
    types: numberTypes,
    ...(applicationName ? { application_name: applicationName } : {}),
  });
  // An idle connection the server dropped is removed by the pool; the next query opens a new one.
  pool.on('error', () => undefined);
  if (timeoutMs > 0) failFastWhenUnanswering(pool, health, timeoutMs);
  return pool;
}

/**
 * Runs `fn` between BEGIN (READ COMMITTED) and COMMIT on one pooled client, rolling back when it throws.
 * `fn` runs only its own queries: nothing waits on the outside world while the transaction is open. `begin`
 * may add settings of the transaction (`BEGIN; SET LOCAL …`), sent in the same round trip.
 */
export function withTransaction<T>(
  pool: pg.Pool,
  fn: (tx: pg.PoolClient) => Promise<T>,
  begin = 'BEGIN',
): Promise<T> {
  return onClient(pool, async (client) => {
    await client.query(begin);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  });
}

/** A statement and its positional parameters. */
export interface Statement {
  text: string;
  values: readonly unknown[];
}

/** The transaction of withTightTransaction: statements inside it, and the last ones, which commit. */
export interface TightTransaction extends Queryable {
  /**
   * Runs `statements` and COMMIT in one round trip; each statement's rows, in order. The transaction is over
   * after it.
   */
  commitWith(statements: readonly Statement[]): Promise<pg.QueryResultRow[][]>;
}

/**
 * withTransaction in two round trips fewer: BEGIN travels with the `first` statements, and `fn` may end the
 * transaction with `commitWith`, its last statements and COMMIT in one round trip (else COMMIT follows on its
 * own). Each goes as one simple-protocol message of several statements, so their parameters are written into
 * the text as literals (`inline`): for short statements of numbers and internal words, such as the order
 * functions' calls. Each statement still runs alone, with a snapshot of its own, as under withTransaction; a
 * failing one aborts the transaction, which is rolled back. A lock taken by the last statements is held until
 * their commit only, not for a further round trip.
 */
export function withTightTransaction<T>(
  pool: pg.Pool,
  first: readonly Statement[],
  fn: (rows: pg.QueryResultRow[][], tx: TightTransaction) => Promise<T>,
): Promise<T> {
  return onClient(pool, async (client) => {
    let committed = false;
    const begun = await inOneMessage(client, first, { begin: true });
    const tx: TightTransaction = {
      query: (text, values) => {
        if (committed) throw new Error('the transaction is committed');
        return client.query(text, values);
      },
      async commitWith(statements) {
        if (committed) throw new Error('the transaction is committed');
        committed = true;
        return inOneMessage(client, statements, { commit: true });
      },
    };
    const result = await fn(begun, tx);
    if (!committed) await client.query('COMMIT');
    return result;
  });
}

/**
 * `statements` in one transaction of one round trip (BEGIN, each, COMMIT as one simple-protocol message, the
 * parameters inlined): each statement's rows, in order. A failing statement aborts all of them (rolled back).
 */
export function inOneTransaction(
  pool: pg.Pool,
  statements: readonly Statement[],
): Promise<pg.QueryResultRow[][]> {
  return onClient(pool, (client) => inOneMessage(client, statements, { begin: true, commit: true }));
}

/**
 * `statements` as one simple-protocol message (their parameters inlined), after BEGIN and before COMMIT when
 * asked: each statement's rows, in order.
 */
async function inOneMessage(
  client: pg.ClientBase,
  statements: readonly Statement[],
  { begin = false, commit = false }: { begin?: boolean; commit?: boolean },
): Promise<pg.QueryResultRow[][]> {
  const parts = [...(begin ? ['BEGIN'] : []), ...statements.map(inline), ...(commit ? ['COMMIT'] : [])];
  const results = (await client.query(parts.join('; '))) as unknown as pg.QueryResult | pg.QueryResult[];
  // node-postgres answers a message of one statement with its result alone, of several with an array.
  const each = Array.isArray(results) ? results : [results];
  const from = begin ? 1 : 0;
  return each.slice(from, from + statements.length).map((result) => result.rows);
}

/** Calls one round trip and commit carries at most. */
const MAX_GROUP = 16;

/**
 * A statement that commits on its own, run in groups (group commit): the calls made in one turn of the event
 * loop (a worker's jobs whose attempts came back together) go together, and a call made while a group is on its
 * way to the server waits for it with those that gather meanwhile, in one transaction of one round trip
 * (inOneTransaction: one commit, one flush of the log for the group). Alone in its turn, a call is its own
 * statement, as before; under load, a group costs one round trip and one commit. Each call is the same guarded
 * statement as alone, so a group changes only the commits; should a group fail (a deadlock with a writer
 * elsewhere, say), nothing of it was kept and each call runs again alone, answering (or failing) for itself;
 * should the store be unavailable, every call of the group fails as it would have alone. `answer` reads a call's
 * result from its rows.
 */
export function groupedCalls<R>(
  pool: pg.Pool,
  answer: (rows: pg.QueryResultRow[]) => R,
): (call: Statement) => Promise<R> {
  interface Waiting {
    call: Statement;
    resolve: (result: R) => void;
    reject: (err: unknown) => void;
  }
  let waiting: Waiting[] = [];
  let sending = false;
  const alone = (w: Waiting) =>
    pool.query(w.call.text, [...w.call.values]).then((result) => w.resolve(answer(result.rows)), w.reject);
  const send = async () => {
    while (waiting.length > 0) {
      const group = waiting.slice(0, MAX_GROUP);
      waiting = waiting.slice(group.length);
      try {
        if (group.length === 1) {
          const result = await pool.query(group[0]!.call.text, [...group[0]!.call.values]);
          group[0]!.resolve(answer(result.rows));
          continue;
        }
        const rows = await inOneTransaction(
          pool,
          group.map((w) => w.call),
        );
        group.forEach((w, i) => w.resolve(answer(rows[i] ?? [])));
      } catch (err) {
        if (isStoreUnavailable(err)) {
          // The store away: each call alone would wait for it again, and so would each call that queued behind
          // this group meanwhile (one wait each, in turn): they all fail now, as the group did.
          const behind = waiting;
          waiting = [];
          for (const w of [...group, ...behind]) w.reject(err);
        } else if (group.length === 1) group[0]!.reject(err);
        // Otherwise each answers for itself.
        else await Promise.all(group.map(alone));
      }
    }
    sending = false;
  };
  return (call) =>
    new Promise<R>((resolve, reject) => {
      waiting.push({ call, resolve, reject });
      // The first call of a turn waits for the end of it (setImmediate), so that the others of the turn join it.
      if (!sending) {
        sending = true;
        setImmediate(() => void send());
      }
    });
}

/**
 * `statement` with its parameters written in as SQL literals: numbers, booleans, null, strings (quoted by
 * node-postgres' escapeLiteral) and arrays of numbers or nulls. Anything else is refused: this is not a general
 * quoting of values, only what lets a call of a function travel in a multi-statement message.
 */
export function inline({ text, values }: Statement): string {
  const { between, slots } = placeholdersOf(text);
  let written = between[0]!;
  for (let i = 0; i < slots.length; i++) {
    const index = slots[i]!;
    if (index >= values.length) throw new Error(`no value for $${index + 1}`);
    written += literal(values[index]) + between[i + 1]!;
  }
  return written;
}

/** A statement's text cut at its placeholders: the text between them, and each one's index in the values. */
interface Placeholders {
  between: string[];
  slots: number[];
}

/**
 * Each text's placeholders, found once: the texts inlined are the adapters' own constants, a few dozen, and a
 * worker inlines several per order (a regular expression's replace per call was an eighth of what it allocated).
 * Bounded all the same.
 */
const placeholders = new Map<string, Placeholders>();

function placeholdersOf(text: string): Placeholders {
  let found = placeholders.get(text);
  if (found) return found;
  found = { between: [], slots: [] };
  let from = 0;
  for (const match of text.matchAll(/\$(\d+)/g)) {
    found.between.push(text.slice(from, match.index));
    found.slots.push(Number(match[1]) - 1);
    from = match.index + match[0].length;
  }
  found.between.push(text.slice(from));
  if (placeholders.size >= 256) placeholders.clear();
  placeholders.set(text, found);
  return found;
}

function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`cannot inline ${value}`);
    return `'${value}'`;
  }
  if (typeof value === 'string') return pg.escapeLiteral(value);
  if (Array.isArray(value)) return `'{${value.map(element).join(',')}}'`;
  throw new Error(`cannot inline a ${typeof value}`);
}

function element(value: unknown): string {
  if (value === null) return 'NULL';
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw new Error(`cannot inline an array holding ${String(value)}`);
}

/**
 * Runs `fn` on one pooled client, rolling back when it throws; the connection is closed rather than handed
 * back when the server dropped it.
 */
async function onClient<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  // A checked-out client has no listener of the pool's: a server that ends the connection between two of its
  // statements (a restart: 57P01) would otherwise be an unhandled 'error' event, and the process would exit. The
  // next statement then fails, and the connection is closed rather than handed back.
  const onError = (err: Error) => (broken ??= err);
  client.on('error', onError);
  try {
    return await fn(client);
  } catch (err) {
    // A connection that cannot even roll back is closed rather than handed to the next caller.
    await client.query('ROLLBACK').catch((rollbackError: unknown) => {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    });
    throw err;
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}
