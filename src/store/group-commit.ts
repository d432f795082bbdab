import type { AcceptResult, NewOrder, OrderStore } from './store.port.js';

/** Most orders accepted in one transaction; more wait for the next. */
export const MAX_GROUP = 64;

interface Pending {
  order: NewOrder;
  resolve: (result: AcceptResult) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit for single orders: the acceptances asked for in one turn of the event loop (requests that arrived
 * together) are applied by one `acceptMany`, one transaction, instead of one transaction each. Each caller's
 * promise still settles only after the transaction that holds its order has committed, with that order's own
 * result, so nothing is acknowledged before it is stored. On SQLite this takes the write lock once for the group
 * (the web and the workers take turns with it); on PostgreSQL it is one round trip and one commit.
 *
 * Two orders with the same client and request id never share a group (the second waits for the next), so a
 * concurrent duplicate is answered exactly as it would be one after the other. When the transaction fails, every
 * order of the group fails with its error and none is stored: each client is told to retry (5000 or 5030).
 */
export function groupCommits(orders: OrderStore, maxGroup = MAX_GROUP): OrderStore {
  let waiting: Pending[] = [];
  let scheduled = false;

  const flush = () => {
    scheduled = false;
    const keys = new Set<string>();
    const group: Pending[] = [];
    const later: Pending[] = [];
    for (const pending of waiting) {
      const key = `${pending.order.clientId}\n${pending.order.requestId}`;
      if (group.length < maxGroup && !keys.has(key)) {
        keys.add(key);
        group.push(pending);
      } else later.push(pending);
    }
    waiting = later;
    if (waiting.length > 0) schedule();
    orders.acceptMany(group.map((p) => p.order)).then(
      (results) => group.forEach((p, i) => p.resolve(results[i]!)),
      (err: unknown) => group.forEach((p) => p.reject(err)),
    );
  };
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  };

  return {
    ...orders,
    accept(order) {
      return new Promise<AcceptResult>((resolve, reject) => {
        waiting.push({ order, resolve, reject });
        schedule();
      });
    },
  };
}
