import { fromCents, type Currency } from '../domain/money.js';
import type { PricingResult } from '../domain/pricing.js';
import type { ItemView, OrderView } from '../store/port/store.port.js';

export interface OrderItemSummary {
  orderItemId: number;
  cost: number;
  shipcost: number;
  status: number;
  itemUpdateDate?: string;
}

export interface ListingSummary {
  listingId: number;
  title: string;
  isbn: string;
  quantity: number;
  vendorId: number;
  shippingCompany?: string;
  shippingTrackingId?: string;
  minShippingDays: number;
  maxShippingDays: number;
  orderItems: OrderItemSummary[];
}

export interface OrderResponse {
  orderId: number;
  createDate: string;
  currency: Currency;
  listings: ListingSummary[];
  dryrun: boolean;
  tax?: number;
  taxModel?: string;
  referenceId?: string;
}

export const isoMs = (epochMs: number): string => new Date(epochMs).toISOString();

/**
 * The OrderResponse of a stored order. `items` must be this order's items (any subset, e.g. only those
 * matching a search's item criteria) sorted by orderItemId; listings left with no item are omitted.
 * On creation (`withItemDates` false) items carry no itemUpdateDate, as SPEC.md says.
 */
export function toOrderResponse(
  order: OrderView,
  items: readonly ItemView[],
  withItemDates = true,
): OrderResponse {
  const lines = new Map<number, ItemView[]>();
  for (const item of items) {
    const line = lines.get(item.lineNo);
    if (line) line.push(item);
    else lines.set(item.lineNo, [item]);
  }
  const listings = [...lines.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, rows]) => toListingSummary(rows, withItemDates));
  return {
    orderId: order.orderId,
    createDate: isoMs(order.createdAt),
    currency: order.currency,
    listings,
    dryrun: false,
    ...(order.taxCents !== null ? { tax: fromCents(order.taxCents) } : {}),
    ...(order.taxModel !== null ? { taxModel: order.taxModel } : {}),
    ...(order.referenceId !== null ? { referenceId: order.referenceId } : {}),
  };
}

function toListingSummary(rows: ItemView[], withItemDates: boolean): ListingSummary {
  const first = rows[0]!;
  const company = rows.find((r) => r.shippingCompany !== null)?.shippingCompany;
  const tracking = rows.find((r) => r.trackingId !== null)?.trackingId;
  return {
    listingId: first.listingId,
    title: first.title,
    isbn: first.isbn,
    quantity: first.lineQuantity,
    vendorId: first.vendorId,
    ...(company ? { shippingCompany: company } : {}),
    ...(tracking ? { shippingTrackingId: tracking } : {}),
    minShippingDays: first.minDays ?? 0,
    maxShippingDays: first.maxDays ?? 0,
    orderItems: rows.map((r) => ({
      orderItemId: r.orderItemId,
      cost: fromCents(r.costCents),
      shipcost: fromCents(r.shipcostCents),
      status: r.status,
      ...(withItemDates ? { itemUpdateDate: isoMs(r.updatedAt) } : {}),
    })),
  };
}

/** What a dry run answers: the order as it would be priced now, every identifier 0 (SPEC.md, docs/api.md#pricing). */
export function toDryRunResponse(
  pricing: PricingResult,
  currency: Currency,
  referenceId: string | undefined,
  now: number,
): OrderResponse {
  return {
    orderId: 0,
    createDate: isoMs(now),
    currency,
    listings: pricing.lines.map((line) => ({
      listingId: line.listingId,
      title: line.title,
      isbn: line.isbn,
      quantity: line.quantity,
      vendorId: line.vendorId,
      minShippingDays: line.minDays ?? 0,
      maxShippingDays: line.maxDays ?? 0,
      orderItems: line.items.map((item) => ({
        orderItemId: 0,
        cost: fromCents(item.costCents),
        shipcost: fromCents(item.shipcostCents),
        status: line.status,
      })),
    })),
    dryrun: true,
    ...(pricing.taxCents !== null ? { tax: fromCents(pricing.taxCents) } : {}),
    ...(pricing.taxModel !== null ? { taxModel: pricing.taxModel } : {}),
    ...(referenceId !== undefined ? { referenceId } : {}),
  };
}
