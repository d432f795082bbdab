/** Part of the store port (../store.port.ts): the catalog as pricing reads it, and its import. */
import type { CatalogListing, CatalogVendor, PricingCatalog } from '../../domain/catalog.js';

export type { CatalogListing, CatalogVendor, PricingCatalog };

export interface CatalogStore {
  loadForPricing(listingIds: readonly number[]): Promise<PricingCatalog>;
  /** Upserts a whole validated catalog in one transaction; a vendor's rates are replaced by the file's. */
  importCatalog(vendors: readonly CatalogVendor[], listings: readonly CatalogListing[]): Promise<void>;
  vendorExists(vendorId: number): Promise<boolean>;
  /** False when there is no such vendor. */
  deactivateVendor(vendorId: number): Promise<boolean>;
}
