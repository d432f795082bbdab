// A node-postgres client emits 'error' whenever its server ends the session outside a statement (a restart, a
// failover, pg_terminate_backend, an idle session timed out, a reset link), including in the same read as the
// answer that ends its connecting; with no listener at that moment, Node throws and the process exits. Every
// client of the adapter listens from its construction (postgres-hosts.ts); this guard is for any client that does
// not: the process logs the error and goes on, the client having already failed its statements and marked itself
// unusable (the pool drops it on release, the next statement opens a new connection).
import pg from 'pg';

/** What the guard is told about an error that no listener took: its code (SQLSTATE or socket) and message. */
export type UnheardClientError = (err: { code: string; message: string }) => void;

let unheard: UnheardClientError | undefined;

/**
 * Makes an 'error' that a node-postgres client or pool emits with no listener go to `onUnheard` instead of ending
 * the process; process-wide, for every client and pool of the process, whatever made it. Called again, it only
 * changes who is told.
 */
export function guardPostgresClients(onUnheard: UnheardClientError): void {
  const first = unheard === undefined;
  unheard = onUnheard;
  if (!first) return;
  for (const prototype of [pg.Client.prototype, pg.Pool.prototype] as { emit: Emit }[]) {
    const emit = prototype.emit;
    prototype.emit = function (this: NodeJS.EventEmitter, event, ...args) {
      if (event !== 'error' || this.listenerCount('error') > 0) return emit.call(this, event, ...args);
      unheard?.(describe(args[0]));
      return false;
    };
  }
}

type Emit = (this: NodeJS.EventEmitter, event: string | symbol, ...args: unknown[]) => boolean;

/** The code and first line of an error, short: a server's message names no secret, and a line stays one line. */
function describe(err: unknown): { code: string; message: string } {
  const e = err as { code?: unknown; message?: unknown } | null | undefined;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  return {
    code: typeof e?.code === 'string' ? e.code : '',
    message: message.split('\n', 1)[0]!.slice(0, 200),
  };
}
