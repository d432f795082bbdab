import type { PricingCatalog } from '../domain/catalog.js';
import type { PricingListing, PricingVendor } from '../domain/pricing.js';

/**
 * Remembers a lookup's answers for `ttlMs` per process: hot keys stop costing a query per request, and a change
 * (a disabled key, a new card) is seen within `ttlMs`. Bounded: it forgets everything when it fills up.
 */
export function cachedFor<K, V>(
  ttlMs: number,
  lookup: (key: K) => V,
  maxEntries = 10_000,
): (key: K, now: number) => V {
  const entries = new Map<K, { value: V; at: number }>();
  return (key, now) => {
    const hit = entries.get(key);
    if (hit && now - hit.at < ttlMs) return hit.value;
    const value = lookup(key);
    if (entries.size >= maxEntries) entries.clear();
    entries.set(key, { value, at: now });
    return value;
  };
}

/**
 * A pricing catalog from listings (each with its vendor) read within `ttlMs`: when every listing asked for was
 * read that recently, no query; otherwise the whole set is read again and remembered. A listing that does not
 * exist is never remembered, so one created since is found at once. Bounded like `cachedFor`.
 */
export function recentListings(
  ttlMs: number,
  load: (listingIds: readonly number[]) => Promise<PricingCatalog>,
  maxEntries = 10_000,
): (listingIds: readonly number[], now: number) => Promise<PricingCatalog> {
  const entries = new Map<number, { listing: PricingListing; vendor: PricingVendor; at: number }>();
  return async (listingIds, now) => {
    const hits = listingIds.map((id) => entries.get(id));
    if (hits.every((hit) => hit !== undefined && now - hit.at < ttlMs)) {
      const catalog: PricingCatalog = { listings: new Map(), vendors: new Map() };
      for (const hit of hits as { listing: PricingListing; vendor: PricingVendor }[]) {
        catalog.listings.set(hit.listing.listingId, hit.listing);
        catalog.vendors.set(hit.vendor.vendorId, hit.vendor);
      }
      return catalog;
    }
    const catalog = await load(listingIds);
    if (entries.size + catalog.listings.size > maxEntries) entries.clear();
    for (const listing of catalog.listings.values()) {
      const vendor = catalog.vendors.get(listing.vendorId);
      if (vendor) entries.set(listing.listingId, { listing, vendor, at: now });
    }
    return catalog;
  };
}

/**
 * Shares one computation among concurrent callers: while a call is in flight, others get its promise instead
 * of starting their own, so a thousand concurrent scrapes cost what one does.
 */
export function sharedInFlight<T>(compute: () => Promise<T>): () => Promise<T> {
  let inFlight: Promise<T> | null = null;
  return () =>
    (inFlight ??= compute().finally(() => {
      inFlight = null;
    }));
}
