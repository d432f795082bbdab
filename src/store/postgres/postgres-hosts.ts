// DATABASE_URL naming several hosts, in libpq's form (`postgres://u@h1:5432,h2:5433/db?target_session_attrs=
// read-write`), which node-postgres does not read: a new connection goes to the first host that answers and, with
// target_session_attrs=read-write, accepts writes (`SHOW transaction_read_only` is off), as libpq's does. The host
// found is kept for the connections that follow, until one of them meets a server that is gone, shutting down or
// read-only (a primary lost and a standby promoted in its place): then the next connection looks again.
import pg from 'pg';
import { noteServer } from '../../server-changes.js';
import { parsePostgresHosts, type PostgresHost, type PostgresHosts } from '../../config/postgres-url.js';

export { parsePostgresHosts };

/** A connection made when no host of DATABASE_URL would do: unavailable (08001), as a server that is away is. */
export class NoServerError extends Error {
  readonly code = '08001';
  constructor(tried: string[]) {
    super(`no host of DATABASE_URL takes a connection${tried.length ? ` (${tried.join('; ')})` : ''}`);
    this.name = 'NoServerError';
  }
}

/** Errors after which the server a connection reached may no longer be the one to use. */
const LEFT_SERVER = /^(08...|57P0[123]|25006|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH)$/;
const READ_ONLY = '25006';

/** Which host new connections of one URL go to: found once, kept until a connection meets trouble there. */
class HostChoice {
  private chosen: PostgresHost | undefined;
  private looking: Promise<PostgresHost> | undefined;

  constructor(
    readonly target: PostgresHosts,
    private readonly timeoutMs: number,
  ) {}

  /** The host to connect to: the one found, else the first (in order) that answers and will do. */
  pick(): Promise<PostgresHost> {
    const { hosts, readWrite } = this.target;
    if (this.chosen) return Promise.resolve(this.chosen);
    // One host and any server will do: nothing to look for, as before.
    if (hosts.length === 1 && !readWrite) return Promise.resolve(hosts[0]!);
    this.looking ??= this.look().finally(() => (this.looking = undefined));
    return this.looking;
  }

  /** A connection to `host` met trouble: the next one looks again. */
  forget(host: PostgresHost): void {
    if (this.chosen?.host === host.host && this.chosen.port === host.port) this.chosen = undefined;
  }

  private async look(): Promise<PostgresHost> {
    const tried: string[] = [];
    for (const host of this.target.hosts) {
      const client = new pg.Client({
        connectionString: this.target.urlOf(host),
        connectionTimeoutMillis: this.timeoutMs,
        query_timeout: this.timeoutMs,
      });
      client.on('error', () => undefined);
      try {
        await client.connect();
        if (this.target.readWrite) {
          const { rows } = await client.query<{ transaction_read_only: string }>(
            'SHOW transaction_read_only',
          );
          if (rows[0]?.transaction_read_only !== 'off') {
            tried.push(`${host.host}:${host.port} is read-only`);
            continue;
          }
        }
        this.chosen = host;
        return host;
      } catch (err) {
        tried.push(`${host.host}:${host.port}: ${(err as Error).message.slice(0, 200)}`);
      } finally {
        await client.end().catch(() => undefined);
      }
    }
    throw new NoServerError(tried);
  }
}

const choices = new Map<string, HostChoice>();

/** The host choice of `url`, shared by every pool and session of the process on that URL. */
function choiceOf(url: string, timeoutMs: number): HostChoice {
  let choice = choices.get(url);
  if (!choice) {
    choice = new HostChoice(parsePostgresHosts(url), timeoutMs > 0 ? timeoutMs : 5000);
    choices.set(url, choice);
  }
  return choice;
}

/** A URL node-postgres reads (one host, no target_session_attrs): the first host's; connections replace the host. */
export function firstHostUrl(url: string): string {
  const target = parsePostgresHosts(url);
  return choosing(target) ? target.urlOf(target.hosts[0]!) : url;
}

/** Whether there is a host to choose: several, or one that must accept writes. One host, any server: as before. */
const choosing = (target: PostgresHosts) => target.hosts.length > 1 || target.readWrite;

/**
 * `Base` (a pg.Client class) whose connections go to the host of `url` that will do (see above), note the server
 * they reach (server-changes.ts), and hand the search back when they meet trouble there: a statement refused as
 * read-only (25006) also closes its connection when it is released, so that no later work meets that server.
 * `timeoutMs` bounds each try of a host (0: 5 s).
 */
export function targetedClient(url: string, Base: typeof pg.Client, timeoutMs = 0): typeof pg.Client {
  const choice = choiceOf(url, timeoutMs);
  return class TargetedClient extends Base {
    private reached: PostgresHost | undefined;

    constructor(config?: string | pg.ClientConfig) {
      super(config);
      // Listening from the start, for the client's whole life: while it connects (its server may end the session
      // in the same read as the answer that ends connecting, before the pool listens), idle in the pool, checked
      // out between statements, and once ended (client-errors.ts). Whoever uses the client hears it too.
      this.on('error', (err: unknown) => this.met(err));
    }

    override connect(callback?: unknown): never {
      const run = choice.pick().then(async (host) => {
        const self = this as unknown as { host: string; port: number; connectionParameters: PostgresHost };
        if (choosing(choice.target)) {
          self.host = self.connectionParameters.host = host.host;
          self.port = self.connectionParameters.port = host.port;
        }
        this.reached = host;
        try {
          await super.connect();
        } catch (err) {
          choice.forget(host);
          throw err;
        }
        noteServer('postgres', `${self.host}:${self.port}`);
        return this;
      });
      if (typeof callback !== 'function') return run as never;
      const done = callback as (err: unknown) => void;
      run.then(() => done(undefined), done);
      return undefined as never;
    }

    override query(...args: unknown[]): never {
      const callback = args.at(-1);
      if (typeof callback === 'function') {
        // Called back (pg-pool's own query()): the callback is wrapped to see the error.
        args[args.length - 1] = (err: unknown, res?: unknown) => {
          if (err) this.met(err);
          (callback as (err: unknown, res?: unknown) => void)(err, res);
        };
        return (super.query as (...a: unknown[]) => never)(...args);
      }
      const result = (super.query as (...a: unknown[]) => unknown)(...args);
      if (result instanceof Promise) result.catch((err: unknown) => this.met(err));
      return result as never;
    }

    private met(err: unknown): void {
      const code = String((err as { code?: unknown } | null)?.code ?? '');
      if (!LEFT_SERVER.test(code) || !this.reached) return;
      choice.forget(this.reached);
      // A server that turned read-only keeps the connection open: pg-pool drops a client that is ending.
      if (code === READ_ONLY) (this as unknown as { _ending: boolean })._ending = true;
    }
  };
}
