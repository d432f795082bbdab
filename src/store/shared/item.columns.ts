/**
 * An item's columns, declared once for both stores (their names and meanings agree; only their SQL types
 * differ, which each adapter says where it needs them): every statement that reads an item names its columns
 * from here, each as the port's field (StoredItem), so that a row read is the port's object with no mapping, and
 * a column a newer schema adds is never read by accident (old releases run beside new schemas).
 */
import type { NewOrderItem, StoredItem } from '../port/store.port.js';

/** Every column of an item's row, in the table's order, with the field of StoredItem it is read as. */
const ITEM_FIELDS = {
  order_item_id: 'orderItemId',
  order_id: 'orderId',
  client_id: 'clientId',
  order_created_at: 'orderCreatedAt',
  line_no: 'lineNo',
  listing_id: 'listingId',
  vendor_id: 'vendorId',
  title: 'title',
  isbn: 'isbn',
  line_quantity: 'lineQuantity',
  max_price_cents: 'maxPriceCents',
  min_days: 'minDays',
  max_days: 'maxDays',
  cost_cents: 'costCents',
  shipcost_cents: 'shipcostCents',
  tax_cents: 'taxCents',
  status: 'status',
  updated_at: 'updatedAt',
  status_changed_at: 'statusChangedAt',
  shipping_company: 'shippingCompany',
  tracking_id: 'trackingId',
  extra_shipping_cents: 'extraShippingCents',
} as const satisfies Record<string, keyof StoredItem>;

export type ItemColumn = keyof typeof ITEM_FIELDS;

/** Each column with its field, in the table's order. */
export const ITEM_COLUMNS = Object.entries(ITEM_FIELDS) as [ItemColumn, keyof StoredItem][];

/** The columns of the item `alias` as a SELECT list whose row is a StoredItem. */
export const itemFields = (alias: string): string =>
  ITEM_COLUMNS.map(([column, field]) => `${alias}.${column} AS "${field}"`).join(', ');

/**
 * The columns an order gives each of its items when it is accepted (NewOrderItem), in the order acceptance's
 * statements list them; the others are the order's (ids, time) or start at their defaults.
 */
export const ITEM_LINE_COLUMNS = [
  'line_no',
  'listing_id',
  'vendor_id',
  'title',
  'isbn',
  'line_quantity',
  'max_price_cents',
  'min_days',
  'max_days',
  'cost_cents',
] as const satisfies readonly ItemColumn[];

export type ItemLineColumn = (typeof ITEM_LINE_COLUMNS)[number];

/** The field of StoredItem (of NewOrderItem, for a line column) that a column is read as. */
export const fieldOf = <C extends ItemColumn>(column: C): (typeof ITEM_FIELDS)[C] => ITEM_FIELDS[column];

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Holds<T extends true> = T;
/** Does not compile when a field of StoredItem has no column, or the line columns are not NewOrderItem's fields. */
export type ItemColumnsCheck = [
  Holds<Same<keyof StoredItem, (typeof ITEM_FIELDS)[ItemColumn]>>,
  Holds<Same<keyof NewOrderItem, (typeof ITEM_FIELDS)[ItemLineColumn]>>,
];
