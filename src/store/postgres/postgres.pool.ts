import crypto from 'node:crypto';
import pg from 'pg';
import { isStoreUnavailable } from '../store-errors.js';
import { firstHostUrl, targetedClient } from './postgres-hosts.js';

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
  /** Connections per process (default 10). */
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

// Statements with a `*` are run unnamed: a column added by a newer process's migration would change their result
// type, which a prepared statement refuses (0A000 "cached plan must not change result type").
const PREPARABLE = /^[^*;]+$/;

/**
 * Put in a statement whose `*`s cannot change its result type (they are inside, e.g. `t.*` of a subquery of named
 * columns), it lets the statement be prepared all the same: a large statement is then planned once per connection
 * instead of on every call (the webhook claim: planning was two thirds of its server time).
 */
export const FIXED_RESULT = '/* its result columns are named */';
const preparable = (text: string) =>
  PREPARABLE.test(text) || (text.includes(FIXED_RESULT) && !text.includes(';'));

/**
 * Put in a statement whose best plan depends on its values, it keeps the statement unnamed (it holds a `*`), so
 * the server plans it for each call's values: a prepared statement may settle on one generic plan for all of them
 * after five calls.
 */
export const PLAN_EACH_CALL = '/* planned for each call */';
const STALE_PLAN = '0A000';

/** A statement name per text: a hash of it (remembered for the few hundred texts the adapter has). */
const names = new Map<string, string>();
function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    if (names.size >= 1000) names.clear();
    name = `s${crypto.createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    names.set(text, name);
  }
  return name;
}

/** What a store call that waited `timeoutMs` for an answer fails with: the store is unavailable (store-errors.ts). */
export class StoreTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(timeoutMs: number) {
    super(`the database gave no answer within ${timeoutMs} ms (DATABASE_TIMEOUT_MS)`);
    this.name = 'StoreTimeoutError';
  }
}

/**
 * The adapter's connection. With `prepare`, each statement it runs with parameters is prepared once per
 * connection (a named statement, named by a hash of its text): the server parses it once, and plans it once
 * when a generic plan serves (BENCHMARKS.md). Statements without
 * parameters (BEGIN, COMMIT, migrations) and statements with a `*` run as before. Should a schema change still
 * make a prepared statement stale, the execution that finds it fails as any failed statement does, and this
 * connection prepares its statements under new names from then on.
 *
 * With `timeoutMs`, a statement with no answer after that long fails with StoreTimeoutError and the connection is
 * closed (the server, or the pooler, ends whatever it ran: an open transaction is rolled back). A transaction
 * pooler such as PgBouncer keeps a query waiting while its server is away (`query_wait_timeout`, 120 s by
 * default), and a host that stopped answering keeps it waiting for as long as TCP does: without a bound, a web
 * request would wait as long, instead of being answered 503.
 */
function clientClass(prepare: boolean, timeoutMs: number, health: Health): typeof pg.Client {
  return class StoreClient extends pg.Client {
    private generation = 0;

    override query(...args: unknown[]): never {
      const [text, values, callback] = args;
      if (typeof text !== 'string') return (super.query as (...a: unknown[]) => never)(...args);
      const run = this.timed(text, values, prepare && Array.isArray(values) && preparable(text));
      if (typeof callback !== 'function') return run as never;
      // The pool's own query() (pool.query) calls back.
      const done = callback as (err: unknown, result?: pg.QueryResult) => void;
      run.then((result) => done(undefined, result), done);
      return undefined as never;
    }

    private timed(text: string, values: unknown, named: boolean): Promise<pg.QueryResult> {
      const run = (
        named
          ? super.query({
              name: `${statementName(text)}g${this.generation}`,
              text,
              values: values as unknown[],
            })
          : super.query(text, values as unknown[] | undefined)
      ) as Promise<pg.QueryResult>;
      let timedOut = false;
      const timer =
        timeoutMs > 0
          ? setTimeout(() => {
              timedOut = true;
              // Closed as by end() (`_ending`, which pg-pool reads too: no 'error' event), but only once the
              // server was asked to cancel the statement: a closed socket alone leaves it running there.
              const self = this as unknown as {
                _ending: boolean;
                connection: { stream: { destroy(): void } };
              };
              self._ending = true;
              void cancelOnServer(this, CANCEL_WAIT_MS).finally(() => self.connection.stream.destroy());
            }, timeoutMs)
          : undefined;
      return run.then(
        (result) => {
          clearTimeout(timer);
          health.unanswering = false;
          return result;
        },
        (err: unknown) => {
          clearTimeout(timer);
          // 57014: cancelled, by the request above or by the server's statement_timeout (createPool).
          if (timedOut || (timeoutMs > 0 && (err as { code?: string }).code === QUERY_CANCELED)) {
            if (timedOut) health.unanswering = true;
            throw new StoreTimeoutError(timeoutMs);
          }
          if (named && (err as { code?: string }).code === STALE_PLAN) this.generation++;
          throw err;
        },
      );
    }
  };
}

const QUERY_CANCELED = '57014';
/** How long a statement given up on waits for its cancel request to be sent before its connection is closed. */
const CANCEL_WAIT_MS = 1000;

/** Whether the last statement that ended was given up on (no answer in time), until one is answered. */
interface Health {
  unanswering: boolean;
}

/**
 * Makes `pool` fail at once (StoreTimeoutError) a caller who would have to wait for a connection while every
 * connection waits for a server that stopped answering, instead of waiting for a connection and then for its own
 * statement: one wait of `timeoutMs` per call, not two or more. A caller who finds a connection free, or room for
 * a new one, goes on as usual: its statement finds out whether the server answers again.
 */
function failFastWhenUnanswering(pool: pg.Pool, health: Health, timeoutMs: number): void {
  const connect = pool.connect.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { connect: (...args: unknown[]) => unknown }).connect = (...args) => {
    const full = pool.idleCount === 0 && pool.totalCount >= (pool.options.max ?? 10);
    if (!health.unanswering || !full) return connect(...args);
    const err = new StoreTimeoutError(timeoutMs);
    const callback = args[0];
    if (typeof callback === 'function') return void (callback as (e: Error) => void)(err);
    return Promise.reject(err);
  };
}

/** How long opening a connection may take when nothing else bounds it. */
export const CONNECT_TIMEOUT_MS = 10_000;
/** TCP keepalive of every connection to PostgreSQL, probing from 5 s of silence. */
export const KEEPALIVE = { keepAlive: true, keepAliveInitialDelayMillis: 5000 } as const;

/** What node-postgres' Connection offers for a cancel request (its types leave these out). */
interface CancelConnection {
  stream: { destroy(): void; on(event: 'close', listener: () => void): void };
  on(event: 'connect' | 'error', listener: () => void): void;
  connect(portOrPath: number | string, host?: string): void;
  cancel(processID: number, secretKey: number): void;
}

/**
 * Asks the server to cancel what `client`'s connection is running: a CancelRequest (its backend's process id and
 * secret key) on a connection of its own, which the server, or PgBouncer, closes once it has signalled the
 * backend. Resolves then, or after `waitMs` (a server that does not answer).
 */
function cancelOnServer(client: pg.Client, waitMs: number): Promise<void> {
  const { processID, secretKey, host, port } = client as unknown as {
    processID: number | null;
    secretKey: number | null;
    host: string;
    port: number;
  };
  if (processID === null || secretKey === null) return Promise.resolve();
  return new Promise((resolve) => {
    const connection = new pg.Connection() as unknown as CancelConnection;
    const done = () => {
      clearTimeout(timer);
      connection.stream.destroy();
      resolve();
    };
    const timer = setTimeout(done, waitMs);
    connection.on('connect', () => connection.cancel(processID, secretKey));
    connection.on('error', done);
    connection.stream.on('close', done);
    if (host.startsWith('/')) connection.connect(`${host}/.s.PGSQL.${port}`);
    else connection.connect(port, host);
  });
}

/**
 * A pool of `poolSize` connections. Through a pooler it sends no startup option (a transaction pooler refuses
 * them, PgBouncer with "unsupported startup parameter: options"), and straight to the server only
 * statement_timeout: what the service needs of the server's settings is set on its
 * role in its database by a migration (settings.migration.ts), and nothing it does depends on session
 * state between transactions.
 */
export function createPool(
  url: string,
  { poolSize = 10, applicationName, pooling = 'direct', timeoutMs = 0 }: PoolOptions = {},
): pg.Pool {
  const prepare = pooling !== 'transaction';
  const health: Health = { unanswering: false };
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
  return text.replace(/\$(\d+)/g, (_, n: string) => {
    const index = Number(n) - 1;
    if (index >= values.length) throw new Error(`no value for $${n}`);
    return literal(values[index]);
  });
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
