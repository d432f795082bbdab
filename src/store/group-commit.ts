import { groupCalls } from '../group-calls.js';
import type { AcceptResult, NewOrder, OrderStore, ProcessingStore, Settlement } from './store.port.js';

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
