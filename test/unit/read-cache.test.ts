import { describe, expect, it } from 'vitest';
import type { PricingCatalog } from '../../src/domain/catalog.js';
import { recentListings } from '../../src/services/read-cache.js';

// A catalog of listings 1..9 (vendor 100 + id), counting what it was asked for.
function countingCatalog() {
  const loads: number[][] = [];
  let price = 1000;
  const load = async (ids: readonly number[]): Promise<PricingCatalog> => {
    loads.push([...ids]);
    const catalog: PricingCatalog = { listings: new Map(), vendors: new Map() };
    for (const id of ids.filter((id) => id < 10)) {
      catalog.listings.set(id, {
        listingId: id,
        vendorId: 100 + id,
        title: 't',
        isbn: 'i',
        priceCents: price,
        stock: 5,
      });
      catalog.vendors.set(100 + id, {
        vendorId: 100 + id,
        country: 'USA',
        currency: 'USD',
        active: true,
        rates: {},
      });
    }
    return catalog;
  };
  return { loads, load, setPrice: (p: number) => (price = p) };
}

describe('recent listings', () => {
  it('answers from listings read within the time, and reads again after it', async () => {
    const { loads, load, setPrice } = countingCatalog();
    const recent = recentListings(1000, load);
    expect((await recent([1, 2], 0)).listings.get(1)?.priceCents).toBe(1000);
    setPrice(1200);
    const cached = await recent([2, 1], 999);
    expect([...cached.listings.keys()].sort()).toEqual([1, 2]);
    expect(cached.vendors.get(102)?.vendorId).toBe(102);
    expect(cached.listings.get(1)?.priceCents).toBe(1000);
    expect(loads).toHaveLength(1);
    expect((await recent([1], 1000)).listings.get(1)?.priceCents).toBe(1200);
    expect(loads).toHaveLength(2);
  });

  it('reads the whole set when one listing was not read, and never remembers a missing one', async () => {
    const { loads, load } = countingCatalog();
    const recent = recentListings(1000, load);
    await recent([1], 0);
    expect((await recent([1, 3], 10)).listings.has(3)).toBe(true);
    expect(loads).toEqual([[1], [1, 3]]);
    expect((await recent([42], 20)).listings.has(42)).toBe(false);
    await recent([42], 30);
    expect(loads).toHaveLength(4);
  });
});
