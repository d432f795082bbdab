// The adapter's connection class: statements prepared once per connection, a statement bounded by the service's
// time-out (cancelled on the server, its connection closed), and the pool's fail-fast while the server does not
// answer. postgres.pool.ts makes pools of it.
import crypto from 'node:crypto';
import pg from 'pg';

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
export function clientClass(prepare: boolean, timeoutMs: number, health: Health): typeof pg.Client {
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
      const sentAt = performance.now();
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
          health.answeredAt = performance.now();
          return result;
        },
        (err: unknown) => {
          clearTimeout(timer);
          // 57014: cancelled, by the request above or by the server's statement_timeout (createPool).
          if (timedOut || (timeoutMs > 0 && (err as { code?: string }).code === QUERY_CANCELED)) {
            // The server is judged, not the statement: one that answered another statement meanwhile (a slow
            // search beside quick orders) is answering.
            if (timedOut && health.answeredAt <= sentAt) health.unanswering = true;
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

/** What a pool's statements tell of its server. */
export interface Health {
  /**
   * Whether the last statement that ended was given up on (no answer in time) and no statement was answered
   * while it waited, until one is answered.
   */
  unanswering: boolean;
  /** When a statement was last answered (performance.now()). */
  answeredAt: number;
}

export const newHealth = (): Health => ({ unanswering: false, answeredAt: 0 });

/**
 * Makes `pool` fail at once (StoreTimeoutError) a caller who would have to wait for a connection while every
 * connection waits for a server that stopped answering, instead of waiting for a connection and then for its own
 * statement: one wait of `timeoutMs` per call, not two or more. A caller who finds a connection free, or room for
 * a new one, goes on as usual: its statement finds out whether the server answers again. A statement given up on
 * while others were answered (one client's slow search) says nothing of the server: no one fails for it.
 */
export function failFastWhenUnanswering(pool: pg.Pool, health: Health, timeoutMs: number): void {
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
