/**
 * The order rows as both adapters' SQL names their columns, and their mapping to the port's objects; an item is
 * read as the port's object already (item.columns.ts), or as a tuple of a search page. Only the adapters import
 * this: no row leaves them.
 */
import { ItemStatus, type ItemStatusCode } from '../../domain/item-status.js';
import type { Currency } from '../../domain/money.js';
import { ITEM_LINE_COLUMNS, type ItemColumn } from './item.columns.js';
import type {
  ItemView,
  NewOrder,
  NewOrderItem,
  OrderAddress,
  StoredItem,
  StoredOrder,
} from '../port/store.port.js';

/** An order row; `Address` is how the adapter hands over the address columns (JSON text or an object). */
export interface OrderRow<Address> {
  order_id: number;
  client_id: number;
  request_id: string;
  request_hash: string;
  reference_id: string | null;
  domain: string;
  currency: Currency;
  shipping_mode: 'S' | 'P';
  ship_addr: Address;
  bill_addr: Address;
  card_id: number;
  total_max_price_cents: number | null;
  tax_cents: number | null;
  tax_model: string | null;
  total_cents: number | null;
  phase: 'queued' | 'reserved' | 'settled';
  attempts: number;
  lease_until: number | null;
  created_at: number;
}

export function toStoredOrder<Address>(
  r: OrderRow<Address>,
  address: (column: Address) => OrderAddress,
): StoredOrder {
  return {
    orderId: r.order_id,
    clientId: r.client_id,
    requestId: r.request_id,
    requestHash: r.request_hash,
    referenceId: r.reference_id,
    domain: r.domain,
    currency: r.currency,
    shippingMode: r.shipping_mode,
    shipAddr: address(r.ship_addr),
    billAddr: address(r.bill_addr),
    cardId: r.card_id,
    totalMaxPriceCents: r.total_max_price_cents,
    taxCents: r.tax_cents,
    taxModel: r.tax_model,
    totalCents: r.total_cents,
    phase: r.phase,
    attempts: r.attempts,
    leaseUntil: r.lease_until,
    createdAt: r.created_at,
  };
}

/**
 * A new item as acceptance stores it: what the order gave it, QUEUED with no charges yet, and the id the insert
 * returned. Both adapters answer a new order so, reading back no item row.
 */
export const newStoredItem = (
  orderItemId: number,
  orderId: number,
  order: Pick<NewOrder, 'clientId' | 'createdAt'>,
  item: NewOrderItem,
): StoredItem => ({
  orderItemId,
  orderId,
  clientId: order.clientId,
  orderCreatedAt: order.createdAt,
  lineNo: item.lineNo,
  listingId: item.listingId,
  vendorId: item.vendorId,
  title: item.title,
  isbn: item.isbn,
  lineQuantity: item.lineQuantity,
  maxPriceCents: item.maxPriceCents,
  minDays: item.minDays,
  maxDays: item.maxDays,
  costCents: item.costCents,
  shipcostCents: 0,
  taxCents: 0,
  status: ItemStatus.QUEUED,
  updatedAt: order.createdAt,
  statusChangedAt: order.createdAt,
  shippingCompany: null,
  trackingId: null,
  extraShippingCents: null,
});

/** The distinct listings of an order's items, in item order: what pricing the order reads. */
export const listingsOf = (items: readonly Pick<StoredItem, 'listingId'>[]): number[] => [
  ...new Set(items.map((item) => item.listingId)),
];

/**
 * The item columns of a search page, in the order of its item tuples; both searches read items so. As ItemView is
 * made: the ids, the item's line as ordered without its limit (ItemLine), then what attempts and moves change.
 */
export const ITEM_VIEW_COLUMNS: readonly ItemColumn[] = [
  'order_item_id',
  'order_id',
  ...ITEM_LINE_COLUMNS.filter((column) => column !== 'max_price_cents'),
  'shipcost_cents',
  'status',
  'updated_at',
  'shipping_company',
  'tracking_id',
];

/** An item of a search page, as ITEM_VIEW_COLUMNS lists its columns. */
export type ItemTuple = [
  ...[number, number, number, number, number, string, string, number],
  ...[number | null, number | null, number, number, ItemStatusCode, number, string | null, string | null],
];

export const toItemView = (r: ItemTuple): ItemView => ({
  orderItemId: r[0],
  orderId: r[1],
  lineNo: r[2],
  listingId: r[3],
  vendorId: r[4],
  title: r[5],
  isbn: r[6],
  lineQuantity: r[7],
  minDays: r[8],
  maxDays: r[9],
  costCents: r[10],
  shipcostCents: r[11],
  status: r[12],
  updatedAt: r[13],
  shippingCompany: r[14],
  trackingId: r[15],
});
