/** Rows as stored: the shapes the repositories read and the views map. */
export interface OrderRow {
  order_id: number;
  client_id: number;
  request_id: string;
  request_hash: string;
  reference_id: string | null;
  domain: string;
  currency: string;
  shipping_mode: 'S' | 'P';
  ship_addr: string;
  bill_addr: string;
  card_id: number;
  total_max_price_cents: number | null;
  tax_cents: number | null;
  tax_model: string | null;
  total_cents: number | null;
  phase: 'queued' | 'reserved' | 'settled';
  attempts: number;
  created_at: number;
}

export interface OrderItemRow {
  order_item_id: number;
  order_id: number;
  client_id: number;
  order_created_at: number;
  line_no: number;
  listing_id: number;
  vendor_id: number;
  title: string;
  isbn: string;
  line_quantity: number;
  max_price_cents: number | null;
  min_days: number | null;
  max_days: number | null;
  cost_cents: number;
  shipcost_cents: number;
  tax_cents: number;
  status: number;
  updated_at: number;
  status_changed_at: number;
  shipping_company: string | null;
  tracking_id: string | null;
  extra_shipping_cents: number | null;
}

/** The columns of an order that its OrderResponse shows; a search reads no others. */
export type OrderViewRow = Pick<
  OrderRow,
  'order_id' | 'created_at' | 'currency' | 'tax_cents' | 'tax_model' | 'reference_id'
>;

/** The columns of an item that its OrderResponse shows, and order_id to group by. */
export type ItemViewRow = Pick<
  OrderItemRow,
  | 'order_item_id'
  | 'order_id'
  | 'line_no'
  | 'listing_id'
  | 'vendor_id'
  | 'title'
  | 'isbn'
  | 'line_quantity'
  | 'min_days'
  | 'max_days'
  | 'cost_cents'
  | 'shipcost_cents'
  | 'status'
  | 'updated_at'
  | 'shipping_company'
  | 'tracking_id'
>;
