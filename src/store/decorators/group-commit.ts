import { groupCalls } from '../../group-calls.js';
import { isStoreUnavailable } from '../store-errors.js';
import type {
  AcceptResult,
  AttemptBegun,
  AttemptRequest,
  NewOrder,
  OrderStore,
  ProcessingStore,
  Settlement,
} from '../port/store.port.js';

/** Most orders accepted in one transaction; more wait for the next. */
export const MAX_GROUP = 64;

/**
 * Single orders accepted together share a transaction (`acceptMany`). On SQLite this takes the write lock once
 * for the group (the web and the workers take turns with it); on PostgreSQL it is one round trip and one commit.
 * A concurrent duplicate (same client and request id) waits for the next group. A group that fails for another
 * reason than the store being away kept nothing: each order is accepted again alone, so an order the store
 * refuses fails only its own request (one accepted in a group cut off at its commit comes back a duplicate).
 */
export function groupCommits(orders: OrderStore, maxGroup = MAX_GROUP): OrderStore {
  return {
    ...orders,
    accept: groupCalls((group: readonly NewOrder[]) => orders.acceptMany(group), maxGroup, {
      keyOf: (order) => `${order.clientId}\n${order.requestId}`,
      failsEveryone: isStoreUnavailable,
    }) as (order: NewOrder) => Promise<AcceptResult>,
  };
}

/**
 * Settlements asked for together (a worker's jobs whose payments came back in the same turn) share a transaction
 * (`settleMany`): one commit, one flush of the log, for the group. Each settlement is still applied only while its
 * order is in its phase, so two of one order in a group behave as one after the other, and one applied again
 * alone after its group failed is applied once.
 */
export function groupSettlements(processing: ProcessingStore, maxGroup = MAX_GROUP): ProcessingStore {
  return {
    ...processing,
    settle: groupCalls((group: readonly Settlement[]) => processing.settleMany(group), maxGroup, {
      failsEveryone: isStoreUnavailable,
    }),
  };
}

/**
 * Attempts begun together (a worker's jobs that started in the same turn) share a transaction
 * (`beginAttemptMany`): one commit for the group, and on PostgreSQL two round trips for it instead of two each.
 * Two attempts at one order never share a group. Should a group fail (a deadlock with a writer elsewhere, say),
 * nothing of it was kept and each attempt begins again alone, answering for itself (the store away fails all).
 */
export function groupAttempts(processing: ProcessingStore, maxGroup = MAX_GROUP): ProcessingStore {
  const alone = ({ orderId, lease, price }: AttemptRequest) => processing.beginAttempt(orderId, lease, price);
  const begin = groupCalls(
    async (group: readonly AttemptRequest[]): Promise<(AttemptBegun | null)[]> =>
      group.length === 1 ? [await alone(group[0]!)] : processing.beginAttemptMany(group),
    maxGroup,
    { keyOf: (request) => String(request.orderId), alone, failsEveryone: isStoreUnavailable },
  );
  return {
    ...processing,
    beginAttempt: (orderId, lease, price) => begin({ orderId, lease, price }),
  };
}
