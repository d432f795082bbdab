/**
 * The order as an event keeps it: the fields of its OrderResponse, in camelCase JSON, written by the adapters
 * in the event's transaction and read back for delivery. Only the adapters import this.
 */
import type { ItemView, OrderView, OrderWithItems } from '../port/store.port.js';

export interface EventSnapshot {
  order: OrderView;
  items: ItemView[];
}

/** The snapshot of an order read inside the transaction of its change. */
export function snapshotOf({ order, items }: OrderWithItems): EventSnapshot {
  return {
    order: {
      orderId: order.orderId,
      createdAt: order.createdAt,
      currency: order.currency,
      taxCents: order.taxCents,
      taxModel: order.taxModel,
      referenceId: order.referenceId,
    },
    items: items.map((i) => ({
      orderItemId: i.orderItemId,
      orderId: i.orderId,
      lineNo: i.lineNo,
      listingId: i.listingId,
      vendorId: i.vendorId,
      title: i.title,
      isbn: i.isbn,
      lineQuantity: i.lineQuantity,
      minDays: i.minDays,
      maxDays: i.maxDays,
      costCents: i.costCents,
      shipcostCents: i.shipcostCents,
      status: i.status,
      updatedAt: i.updatedAt,
      shippingCompany: i.shippingCompany,
      trackingId: i.trackingId,
    })),
  };
}

/** A stored snapshot (JSON text, or an object as PostgreSQL's JSONB reads), its items sorted by id. */
export function readSnapshot(stored: string | EventSnapshot): EventSnapshot {
  const snapshot = typeof stored === 'string' ? (JSON.parse(stored) as EventSnapshot) : stored;
  return { order: snapshot.order, items: [...snapshot.items].sort((a, b) => a.orderItemId - b.orderItemId) };
}
