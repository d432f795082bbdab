// The heavy client, as the benchmark (scripts/bench/heavy.ts) and the test (heavy-search.test.ts) build it:
// orders of many items of one listing, stored as acceptance would, then priced out a minute after each was placed.
import type { CatalogListing, NewOrder, Store } from '../../src/store/port/store.port.js';

export interface HeavyOrders {
  clientId: number;
  cardId: number;
  listing: Pick<CatalogListing, 'listingId' | 'vendorId' | 'title' | 'isbn'>;
  /** The first order's createDate; order i is created i seconds later. */
  t0: number;
  orders: number;
  items: number;
  address: NewOrder['shipAddr'];
}

/** Order `i` of `h`, as acceptance stores it. */
export function heavyOrder(h: HeavyOrders, i: number): NewOrder {
  return {
    clientId: h.clientId,
    requestId: `heavy-${h.clientId}-${i}`,
    requestHash: 'heavy',
    referenceId: null,
    domain: 'bookmarket.com',
    currency: 'USD',
    shippingMode: 'S',
    shipAddr: h.address,
    billAddr: h.address,
    cardId: h.cardId,
    totalMaxPriceCents: null,
    createdAt: h.t0 + i * 1000,
    items: Array.from({ length: h.items }, () => ({
      lineNo: 0,
      listingId: h.listing.listingId,
      vendorId: h.listing.vendorId,
      title: h.listing.title,
      isbn: h.listing.isbn,
      lineQuantity: h.items,
      maxPriceCents: 1,
      minDays: 2,
      maxDays: 5,
      costCents: 0,
    })),
  };
}

/** Stores every order of `h` (20 to a transaction), then prices out their items a minute after each was placed. */
export async function storeHeavyOrders(
  store: Store,
  exec: (sql: string) => Promise<void>,
  h: HeavyOrders,
): Promise<void> {
  for (let i = 0; i < h.orders; i += 20)
    await store.orders.acceptMany(
      Array.from({ length: Math.min(20, h.orders - i) }, (_, k) => heavyOrder(h, i + k)),
    );
  await exec(
    `UPDATE order_items SET status = 14, updated_at = order_created_at + 60000,
       status_changed_at = order_created_at + 60000 WHERE client_id = ${Math.trunc(h.clientId)}`,
  );
}
