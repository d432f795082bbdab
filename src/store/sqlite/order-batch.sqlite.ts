import type { AcceptResult, NewOrder } from '../port/store.port.js';
import type { Db } from './sqlite.db.js';

/**
 * Accepts a batch in one transaction, each order as the single accept would (`acceptOne`, run inside it): its
 * prepared statements run back to back under one write lock.
 */
export function orderBatchAcceptor(
  db: Db,
  acceptOne: (order: NewOrder) => AcceptResult,
): (orders: readonly NewOrder[]) => AcceptResult[] {
  const acceptMany = db.transaction((orders: readonly NewOrder[]) => orders.map(acceptOne));
  return (orders) => acceptMany.immediate(orders);
}
