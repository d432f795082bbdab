// The order shape of the latency benches: 50 listings of one vendor, each order one copy of two of
// them picked at random; and the count of commands Redis has run, to give Redis commands per order.
import crypto from 'node:crypto';
import type { Redis } from 'ioredis';
import type { CatalogListing } from '../../src/store/port/store.port.js';
import { orderOf, type Buyer } from './buyer.js';
import { LOAD_VENDOR } from './load-mix.js';

/** 50 listings of one vendor from `firstId` on, stock enough for every run; `isbnStem`: 11 digits. */
export function fiftyListings(firstId: number, title: string, isbnStem: string): CatalogListing[] {
  return Array.from({ length: 50 }, (_, i) => ({
    listingId: firstId + i,
    vendorId: LOAD_VENDOR.vendorId,
    title: `${title} ${i + 1}`,
    isbn: `${isbnStem}${String(i).padStart(2, '0')}`,
    priceCents: 999 + i * 10,
    quantity: 100_000_000,
  }));
}

/** A real order of one copy each of two different listings, picked at random among `listings`. */
export function twoListingOrder(listings: readonly CatalogListing[], buyer: Buyer): string {
  const first = crypto.randomInt(listings.length);
  const second = (first + 1 + crypto.randomInt(listings.length - 1)) % listings.length;
  return JSON.stringify(orderOf(buyer, [listings[first]!.listingId, listings[second]!.listingId]));
}

/** Commands Redis has run so far, those run by scripts included (the sum of INFO commandstats' calls). */
export async function redisCommandsSoFar(redis: Redis): Promise<number> {
  const stats = await redis.info('commandstats');
  let calls = 0;
  for (const match of stats.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)) calls += Number(match[1]);
  return calls;
}
