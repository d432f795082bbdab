// A web's pool serves every client: one client's searches, whose plans may be long, would otherwise hold every
// connection while other clients' orders and reads wait for one. Each client's searches run on at most its share
// of the pool at once, and all clients' searches together leave one share to everything else (orders, gets,
// deliveries); a search over its client's share waits its turn, in order, for as long as a connection may be
// waited for.
import type { SearchStore } from '../port/store.port.js';

/** What a search that waited its whole time for its client's share fails with: unavailable, as busy (503 5030). */
export class ClientShareTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(waitedMs: number, perClient: number) {
    super(
      `this client's searches held their ${perClient} connections of the pool for ${waitedMs} ms (DB_POOL_CLIENT_SHARE)`,
    );
    this.name = 'ClientShareTimeoutError';
  }
}

/** Runs a client's store work within its share of the pool's connections. */
export interface ClientShare {
  run<T>(clientId: number, work: () => Promise<T>): Promise<T>;
  /** Connections one client's work may hold at once, and all clients' together. */
  readonly perClient: number;
  readonly total: number;
}

/** How many of `poolSize` connections a client may hold (`fraction` of them, at least one), and all together. */
export function shareOf(poolSize: number, fraction: number): { perClient: number; total: number } {
  const perClient = Math.max(1, Math.floor(poolSize * fraction));
  return { perClient, total: Math.max(1, poolSize - perClient) };
}

interface Waiting {
  clientId: number;
  start: () => void;
}

/**
 * The share of `fraction` of a pool of `poolSize` connections (shareOf); a turn waited for longer than `waitMs`
 * fails with ClientShareTimeoutError (0: as long as it takes).
 */
export function clientShare(poolSize: number, fraction: number, waitMs: number): ClientShare {
  const { perClient, total } = shareOf(poolSize, fraction);
  const held = new Map<number, number>();
  let holding = 0;
  const waiting: Waiting[] = [];
  const mayStart = (clientId: number) => holding < total && (held.get(clientId) ?? 0) < perClient;
  const take = (clientId: number) => {
    held.set(clientId, (held.get(clientId) ?? 0) + 1);
    holding += 1;
  };
  const give = (clientId: number) => {
    const left = (held.get(clientId) ?? 1) - 1;
    if (left > 0) held.set(clientId, left);
    else held.delete(clientId);
    holding -= 1;
    // The first in line whose client is under its share goes next: a client at its share does not hold up others.
    const next = waiting.findIndex((w) => mayStart(w.clientId));
    if (next >= 0) waiting.splice(next, 1)[0]!.start();
  };
  const turn = (clientId: number) =>
    new Promise<void>((resolve, reject) => {
      const me: Waiting = {
        clientId,
        start: () => {
          clearTimeout(timer);
          take(clientId);
          resolve();
        },
      };
      const timer =
        waitMs > 0
          ? setTimeout(() => {
              waiting.splice(waiting.indexOf(me), 1);
              reject(new ClientShareTimeoutError(waitMs, perClient));
            }, waitMs)
          : undefined;
      waiting.push(me);
    });
  return {
    perClient,
    total,
    async run(clientId, work) {
      // Whoever waits is held by its own share or by all searches together, never by a free connection.
      if (mayStart(clientId)) take(clientId);
      else await turn(clientId);
      try {
        return await work();
      } finally {
        give(clientId);
      }
    },
  };
}

/** `search` whose searches, and the order keys their cursors name, run within each client's share. */
export function searchWithinShare(search: SearchStore, share: Pick<ClientShare, 'run'>): SearchStore {
  return {
    ...search,
    search: (clientId, criteria) => share.run(clientId, () => search.search(clientId, criteria)),
    orderKey: (clientId, orderId) => share.run(clientId, () => search.orderKey(clientId, orderId)),
  };
}
