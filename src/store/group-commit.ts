import { groupCalls } from '../group-calls.js';
import type {
  AcceptResult,
  AttemptBegun,
  AttemptRequest,
  NewOrder,
  OrderStore,
  ProcessingStore,
  Settlement,
} from './store.port.js';

/** Most orders accepted in one transaction; more wait for the next. */
export const MAX_GROUP = 64;

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

/**
 * Attempts begun together (a worker's jobs that started in the same turn) share a transaction
 * (`beginAttemptMany`): one commit for the group, and on PostgreSQL two round trips for it instead of two each.
 * Two attempts at one order never share a group. Should a group fail (a deadlock with a writer elsewhere, say),
 * nothing of it was kept and each attempt begins again alone, answering for itself.
 */
export function groupAttempts(processing: ProcessingStore, maxGroup = MAX_GROUP): ProcessingStore {
  const alone = ({ orderId, lease, price }: AttemptRequest) => processing.beginAttempt(orderId, lease, price);
  // Each attempt's own outcome, so that one failing alone fails for itself only.
  const begin = groupCalls(
    async (group: readonly AttemptRequest[]): Promise<PromiseSettledResult<AttemptBegun | null>[]> => {
      if (group.length > 1) {
        try {
          const begun = await processing.beginAttemptMany(group);
          return begun.map((value) => ({ status: 'fulfilled', value }));
        } catch {
          // Begun again below, each alone.
        }
      }
      return Promise.allSettled(group.map(alone));
    },
    maxGroup,
    (request) => String(request.orderId),
  );
  return {
    ...processing,
    async beginAttempt(orderId, lease, price) {
      const outcome = await begin({ orderId, lease, price });
      if (outcome.status === 'rejected') throw outcome.reason;
      return outcome.value;
    },
  };
}
