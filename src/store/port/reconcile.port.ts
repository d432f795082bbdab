/** Part of the store port (../store.port.ts): stale orders and items, read in keyset-paged batches. */
import type { ItemStatusCode } from '../../domain/item-status.js';

export interface StaleOrder {
  orderId: number;
  attempts: number;
  createdAt: number;
}

export interface StaleItem {
  orderItemId: number;
  orderId: number;
  status: ItemStatusCode;
  statusChangedAt: number;
}

/** Where the previous batch ended: batches are keyset-paged so a row that stays put is read once. */
export interface StaleOrderKey {
  createdAt: number;
  orderId: number;
}
export interface StaleItemKey {
  statusChangedAt: number;
  orderItemId: number;
}

export interface ReconcileStore {
  /** Unsettled orders accepted before `createdBefore`, oldest first. */
  staleOrders(createdBefore: number, limit: number, after?: StaleOrderKey): Promise<StaleOrder[]>;
  /** Items in `status` since before `changedBefore`, longest waiting first. */
  staleItems(
    status: ItemStatusCode,
    changedBefore: number,
    limit: number,
    after?: StaleItemKey,
  ): Promise<StaleItem[]>;
  /** Orders whose payment version the gateway has not confirmed yet, by order id. */
  pendingPayments(limit: number, afterOrderId?: number): Promise<number[]>;
}
