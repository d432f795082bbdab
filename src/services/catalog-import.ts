import { parseCatalog, type CatalogParseResult } from '../domain/catalog.schema.js';
import type { CatalogStore } from '../store/port/store.port.js';

/**
 * Validates a catalog file as a whole and, when it has no problem, upserts it in one transaction. A listing
 * may name a vendor of the file or one already stored.
 */
export async function importCatalogFile(catalog: CatalogStore, json: unknown): Promise<CatalogParseResult> {
  const stored = await storedVendors(catalog, json);
  const result = parseCatalog(json, (vendorId) => stored.has(vendorId));
  if (result.ok) await catalog.importCatalog(result.vendors, result.listings);
  return result;
}

/** The vendors the file's listings name that the store already has. */
async function storedVendors(catalog: CatalogStore, json: unknown): Promise<Set<number>> {
  const listings = (json as { listings?: unknown } | null)?.listings;
  const named = new Set<number>();
  for (const listing of Array.isArray(listings) ? listings : []) {
    const vendorId = (listing as { vendorId?: unknown } | null)?.vendorId;
    if (Number.isSafeInteger(vendorId)) named.add(vendorId as number);
  }
  const stored = new Set<number>();
  for (const vendorId of named) if (await catalog.vendorExists(vendorId)) stored.add(vendorId);
  return stored;
}
