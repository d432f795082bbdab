// Which server this process is connected to, per link (Redis, PostgreSQL), and how often that changed: a failover
// seen from inside one process. Each new connection reports the address it reached; the first report of a new
// address counts one change and is logged once, however many connections of the process follow it. /readyz and the
// process heartbeat (metrics) read it.

export type Link = 'redis' | 'postgres';

export interface ServerState {
  /** `host:port` of the server the last connection of the link reached. */
  server: string;
  /** When this process first reached `server`, epoch ms. */
  since: number;
  /** How many times the server changed since the process started (0: the first one it reached). */
  changes: number;
}

type Notify = (link: Link, now: ServerState, before: string) => void;

const states = new Map<Link, ServerState>();
let notify: Notify = () => undefined;

/** What a process does when a link's server changes (its logger says so, once). */
export function onServerChange(listener: Notify): void {
  notify = listener;
}

/** A new connection of `link` reached `server`; counts and reports a change of server. */
export function noteServer(link: Link, server: string, now: number = Date.now()): void {
  const state = states.get(link);
  if (state?.server === server) return;
  const next = { server, since: now, changes: state ? state.changes + 1 : 0 };
  states.set(link, next);
  if (state) notify(link, next, state.server);
}

/** The servers this process is connected to, by link (only links it has reached). */
export function serverStates(): Partial<Record<Link, ServerState>> {
  return Object.fromEntries(states);
}
