import { fromCents } from '../domain/money.js';
import type { PricingResult } from '../domain/pricing.js';
import type { ItemViewRow, OrderViewRow } from '../store/order.rows.js';

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
  currency: string;
  listings: ListingSummary[];
  dryrun: boolean;
  tax?: number;
  taxModel?: string;
  referenceId?: string;
}

export const isoMs = (epochMs: number): string => new Date(epochMs).toISOString();

/**
 * The OrderResponse of a stored order. `items` must be this order's items (any subset, e.g. only those
 * matching a search's item criteria) sorted by order_item_id; listings left with no item are omitted.
 * On creation (`withItemDates` false) items carry no itemUpdateDate, as SPEC.md says.
 */
export function toOrderResponse(
  order: OrderViewRow,
  items: readonly ItemViewRow[],
  withItemDates = true,
): OrderResponse {
  const lines = new Map<number, ItemViewRow[]>();
  for (const item of items) {
    const line = lines.get(item.line_no);
    if (line) line.push(item);
    else lines.set(item.line_no, [item]);
  }
  const listings = [...lines.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, rows]) => toListingSummary(rows, withItemDates));
  return {
    orderId: order.order_id,
    createDate: isoMs(order.created_at),
    currency: order.currency,
    listings,
    dryrun: false,
    ...(order.tax_cents !== null ? { tax: fromCents(order.tax_cents) } : {}),
    ...(order.tax_model !== null ? { taxModel: order.tax_model } : {}),
    ...(order.reference_id !== null ? { referenceId: order.reference_id } : {}),
  };
}

function toListingSummary(rows: ItemViewRow[], withItemDates: boolean): ListingSummary {
  const first = rows[0]!;
  const company = rows.find((r) => r.shipping_company !== null)?.shipping_company;
  const tracking = rows.find((r) => r.tracking_id !== null)?.tracking_id;
  return {
    listingId: first.listing_id,
    title: first.title,
    isbn: first.isbn,
    quantity: first.line_quantity,
    vendorId: first.vendor_id,
    ...(company ? { shippingCompany: company } : {}),
    ...(tracking ? { shippingTrackingId: tracking } : {}),
    minShippingDays: first.min_days ?? 0,
    maxShippingDays: first.max_days ?? 0,
    orderItems: rows.map((r) => ({
      orderItemId: r.order_item_id,
      cost: fromCents(r.cost_cents),
      shipcost: fromCents(r.shipcost_cents),
      status: r.status,
      ...(withItemDates ? { itemUpdateDate: isoMs(r.updated_at) } : {}),
    })),
  };
}

/** What a dry run answers: the order as it would be priced now, every identifier 0 (SPEC.md, CONTRACT.md 7). */
export function toDryRunResponse(
  pricing: PricingResult,
  currency: string,
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
