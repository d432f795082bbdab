/** The catalog as the store holds it and pricing reads it: vendors with their rates, listings with stock. */
import type { Currency } from './money.js';
import type { PricingListing, PricingVendor, ShippingMode, ShippingRate, Zone } from './pricing.js';

export interface CatalogVendor {
  vendorId: number;
  name: string;
  country: string;
  currency: Currency;
  rates: { mode: ShippingMode; zone: Zone; rate: ShippingRate }[];
}

export interface CatalogListing {
  listingId: number;
  vendorId: number;
  title: string;
  isbn: string;
  priceCents: number;
  quantity: number;
}

/** The listings asked for that exist, with current stock, and their vendors with rates, as pricing reads them. */
export interface PricingCatalog {
  listings: Map<number, PricingListing>;
  vendors: Map<number, PricingVendor>;
}
