// A small catalog with hand-checkable numbers: one vendor per currency, rates that differ by mode and zone.
import type { CatalogListing, CatalogVendor } from '../../src/store/port/store.port.js';
import type { OrderRequest } from '../../src/services/orders/order-request.schema.js';
import { DEMO_ADDRESS } from '../../scripts/demo-data.js';

const rate = (first: number, additional: number, minDays: number, maxDays: number) => ({
  firstCents: first,
  additionalCents: additional,
  minDays,
  maxDays,
});

export const VENDORS: CatalogVendor[] = [
  {
    vendorId: 501,
    name: 'Harbour Books',
    country: 'GBR',
    currency: 'GBP',
    rates: [
      { mode: 'S', zone: 'domestic', rate: rate(350, 100, 2, 5) },
      { mode: 'S', zone: 'international', rate: rate(900, 400, 7, 21) },
      { mode: 'P', zone: 'domestic', rate: rate(600, 200, 1, 2) },
    ],
  },
  {
    vendorId: 601,
    name: 'Prairie Pages',
    country: 'USA',
    currency: 'USD',
    rates: [
      { mode: 'S', zone: 'domestic', rate: rate(399, 199, 3, 7) },
      { mode: 'S', zone: 'international', rate: rate(1299, 599, 10, 28) },
      { mode: 'P', zone: 'domestic', rate: rate(999, 299, 1, 3) },
      { mode: 'P', zone: 'international', rate: rate(2499, 999, 4, 9) },
    ],
  },
  {
    vendorId: 701,
    name: 'Rheinufer Antiquariat',
    country: 'DEU',
    currency: 'EUR',
    rates: [
      { mode: 'S', zone: 'domestic', rate: rate(300, 100, 1, 3) },
      { mode: 'S', zone: 'international', rate: rate(800, 300, 5, 14) },
    ],
  },
];

export const LISTINGS: CatalogListing[] = [
  {
    listingId: 1001,
    vendorId: 501,
    title: 'Middlemarch',
    isbn: '9780141439549',
    priceCents: 1250,
    quantity: 3,
  },
  {
    listingId: 1002,
    vendorId: 501,
    title: 'Bleak House',
    isbn: '9780141439723',
    priceCents: 899,
    quantity: 10,
  },
  {
    listingId: 2001,
    vendorId: 601,
    title: 'Moby-Dick',
    isbn: '9780142437247',
    priceCents: 1500,
    quantity: 5,
  },
  { listingId: 2002, vendorId: 601, title: 'Walden', isbn: '9780691096124', priceCents: 1000, quantity: 50 },
  {
    listingId: 3001,
    vendorId: 701,
    title: 'Der Zauberberg',
    isbn: '9783596294336',
    priceCents: 1400,
    quantity: 4,
  },
];

/** A buyer in the USA: the demo's, so that the orders the README shows are the ones the tests place. */
export const US_ADDRESS = DEMO_ADDRESS;

export const UK_ADDRESS = {
  name: 'Ben Reader',
  address1: '10 Quay Street',
  city: 'Bristol',
  country: 'GBR',
  zipcode: 'BS1 4DJ',
  phone: '+44 117 496 0000',
};

/** A valid order body for the given card; override any field. */
export function orderBody(ccToken: string, overrides: Partial<OrderRequest> & Record<string, unknown> = {}) {
  return {
    shipAddr: US_ADDRESS,
    billAddr: US_ADDRESS,
    ccToken,
    listings: [{ listingId: 2002, quantity: 1 }],
    shippingMode: 'S',
    domain: 'bookmarket.com',
    ...overrides,
  };
}
