import type { AcceptResult, NewOrder, OrderStore, ProcessingStore, Settlement } from './store.port.js';

/** Most orders accepted in one transaction; more wait for the next. */
export const MAX_GROUP = 64;

interface Pending<I, O> {
  input: I;
  resolve: (result: O) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit: the calls asked for in one turn of the event loop (requests that arrived together, jobs whose
 * payments came back together) are applied by one `many`, one transaction, instead of one transaction each.
 * Each caller's promise settles only after the transaction that holds its input has committed, with its own
 * result, so nothing is acknowledged before it is stored. When the transaction fails, every call of the group
 * fails with its error and none is applied: each caller retries as it would after its own failure.
 *
 * Two inputs with the same `keyOf` never share a group (the second waits for the next), so that a concurrent
 * twin is applied exactly as it would be one after the other.
 */
export function groupCalls<I, O>(
  many: (inputs: readonly I[]) => Promise<O[]>,
  maxGroup: number,
  keyOf?: (input: I) => string,
): (input: I) => Promise<O> {
  let waiting: Pending<I, O>[] = [];
  let scheduled = false;

  const flush = () => {
    scheduled = false;
    const keys = new Set<string>();
    const group: Pending<I, O>[] = [];
    const later: Pending<I, O>[] = [];
    for (const pending of waiting) {
      const key = keyOf?.(pending.input);
      if (group.length < maxGroup && (key === undefined || !keys.has(key))) {
        if (key !== undefined) keys.add(key);
        group.push(pending);
      } else later.push(pending);
    }
    waiting = later;
    if (waiting.length > 0) schedule();
    many(group.map((p) => p.input)).then(
      (results) => group.forEach((p, i) => p.resolve(results[i]!)),
      (err: unknown) => group.forEach((p) => p.reject(err)),
    );
  };
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  };

  return (input) =>
    new Promise<O>((resolve, reject) => {
      waiting.push({ input, resolve, reject });
      schedule();
    });
}

/**
 * Single orders accepted together share a transaction (`acceptMany`). On SQLite this takes the write lock once
 * for the group (the web and the workers take turns with it); on PostgreSQL it is one round trip and one commit.
 * A concurrent duplicate (same client and request id) waits for the next group.
 */
export function groupCommits(orders: OrderStore, maxGroup = MAX_GROUP): OrderStore {
  return {
    ...orders,
    accept: groupCalls(
      (group) => orders.acceptMany(group),
      maxGroup,
      (order: NewOrder) => `${order.clientId}\n${order.requestId}`,
    ) as (order: NewOrder) => Promise<AcceptResult>,
  };
}

/**
 * Settlements asked for together (a worker's jobs whose payments came back in the same turn) share a transaction
 * (`settleMany`): one commit, one flush of the log, for the group. Each settlement is still applied only while its
 * order is in its phase, so two of one order in a group behave as one after the other.
 */
export function groupSettlements(processing: ProcessingStore, maxGroup = MAX_GROUP): ProcessingStore {
  return {
    ...processing,
    settle: groupCalls((group: readonly Settlement[]) => processing.settleMany(group), maxGroup),
  };
}
