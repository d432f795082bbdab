import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseCatalog } from '../../src/domain/catalog.schema.js';

const rate = (first: number, additional: number, minDays: number, maxDays: number) => ({
  first,
  additional,
  minDays,
  maxDays,
});

/** A catalog file as an operator imports it (docs/api.md#catalog). */
const contractExample = () => ({
  vendors: [
    {
      vendorId: 501,
      name: 'Harbour Books',
      country: 'GBR',
      currency: 'GBP',
      shipping: {
        S: { domestic: rate(3.5, 1.0, 2, 5), international: rate(9.0, 4.0, 7, 21) },
        P: { domestic: rate(6.0, 2.0, 1, 2) },
      },
    },
  ],
  listings: [
    { listingId: 1001, vendorId: 501, title: 'Middlemarch', isbn: '9780141439549', price: 12.5, quantity: 3 },
  ],
});

const problemsOf = (json: unknown, vendorExists?: (id: number) => boolean): string[] => {
  const result = parseCatalog(json, vendorExists);
  if (result.ok) throw new Error('expected the catalog to be rejected');
  return result.problems;
};

describe('a good catalog file', () => {
  it('comes out in cents, with one rate per offered mode and zone', () => {
    expect(parseCatalog(contractExample())).toEqual({
      ok: true,
      vendors: [
        {
          vendorId: 501,
          name: 'Harbour Books',
          country: 'GBR',
          currency: 'GBP',
          rates: [
            {
              mode: 'S',
              zone: 'domestic',
              rate: { firstCents: 350, additionalCents: 100, minDays: 2, maxDays: 5 },
            },
            {
              mode: 'S',
              zone: 'international',
              rate: { firstCents: 900, additionalCents: 400, minDays: 7, maxDays: 21 },
            },
            {
              mode: 'P',
              zone: 'domestic',
              rate: { firstCents: 600, additionalCents: 200, minDays: 1, maxDays: 2 },
            },
          ],
        },
      ],
      listings: [
        {
          listingId: 1001,
          vendorId: 501,
          title: 'Middlemarch',
          isbn: '9780141439549',
          priceCents: 1250,
          quantity: 3,
        },
      ],
    });
  });

  it('normalises ISBNs: hyphens and spaces dropped, a final x upper-cased', () => {
    const file = contractExample();
    file.listings.push({ ...file.listings[0]!, listingId: 1002, isbn: '0-14-143954 x' });
    file.listings[0]!.isbn = '978-0-14-143954-9';
    const result = parseCatalog(file);
    expect(result.ok && result.listings.map((listing) => listing.isbn)).toEqual([
      '9780141439549',
      '014143954X',
    ]);
  });

  it('accepts free shipping, zero stock and listings of a vendor already in the catalog', () => {
    const file = {
      vendors: [],
      listings: [
        { listingId: 7, vendorId: 42, title: 'Emma', isbn: '9780141439587', price: 0.01, quantity: 0 },
      ],
    };
    expect(parseCatalog(file, (id) => id === 42).ok).toBe(true);
    const free = contractExample();
    free.vendors[0]!.shipping.S.domestic = rate(0, 0, 0, 0);
    expect(parseCatalog(free).ok).toBe(true);
  });

  it('includes the shipped demo catalog', () => {
    const demo = JSON.parse(
      readFileSync(new URL('../../scripts/demo-catalog.json', import.meta.url), 'utf8'),
    );
    const result = parseCatalog(demo);
    expect(result.ok).toBe(true);
    expect(result.ok && [result.vendors.length, result.listings.length]).toEqual([4, 22]);
  });
});

describe('a bad catalog file', () => {
  it('is rejected with every problem listed at once, each naming its place', () => {
    const file = {
      version: 2,
      vendors: [
        {
          vendorId: 501,
          name: '',
          country: 'XXX',
          currency: 'JPY',
          shipping: {
            S: {
              domestic: { first: 3.555, additional: -1, minDays: 5, maxDays: 2 },
              local: rate(1, 1, 1, 1),
            },
            X: {},
          },
          rating: 5,
        },
        { vendorId: 501, name: 'Twice', country: 'FRA', currency: 'EUR', shipping: {} },
        'not a vendor',
      ],
      listings: [
        { listingId: 0, vendorId: 999, title: 'A', isbn: '12345', price: 0, quantity: 1.5 },
        { vendorId: 501 },
        {
          listingId: 5,
          vendorId: 501,
          title: 'x'.repeat(501),
          isbn: 9780141439549,
          price: '9.99',
          quantity: -1,
        },
        {
          listingId: 5,
          vendorId: 501,
          title: 'Dup',
          isbn: '9780141439549',
          price: 12.345,
          quantity: 1,
          stock: 1,
        },
      ],
    };
    expect(problemsOf(file)).toEqual([
      'version: unknown field',
      'vendors[0].name: must be a string of 1 to 200 characters',
      'vendors[0].country: must be an ISO 3166-1 alpha-3 country code',
      'vendors[0].currency: must be one of USD, EUR, GBP',
      'vendors[0].shipping.S.domestic.first: must be an amount >= 0 with at most two decimals',
      'vendors[0].shipping.S.domestic.additional: must be an amount >= 0 with at most two decimals',
      'vendors[0].shipping.S.domestic.maxDays: must be >= minDays',
      'vendors[0].shipping.S.local: unknown zone (only domestic and international)',
      'vendors[0].shipping.X: unknown shipping mode (only S and P)',
      'vendors[0].rating: unknown field',
      'vendors[1].vendorId: duplicate vendorId 501 (first at vendors[0])',
      'vendors[2]: must be an object',
      'listings[0].listingId: must be an integer greater than 0',
      'listings[0].isbn: must be an ISBN of 10 or 13 digits (an ISBN-10 may end in X; hyphens and spaces are ignored)',
      'listings[0].price: must be a positive amount with at most two decimals',
      'listings[0].quantity: must be an integer >= 0',
      'listings[0].vendorId: vendor 999 is neither in the file nor in the catalog',
      'listings[1].listingId: is required',
      'listings[1].title: is required',
      'listings[1].isbn: is required',
      'listings[1].price: is required',
      'listings[1].quantity: is required',
      'listings[2].title: must be a string of 1 to 500 characters',
      'listings[2].isbn: must be an ISBN of 10 or 13 digits (an ISBN-10 may end in X; hyphens and spaces are ignored)',
      'listings[2].price: must be a positive amount with at most two decimals',
      'listings[2].quantity: must be an integer >= 0',
      'listings[3].price: must be a positive amount with at most two decimals',
      'listings[3].stock: unknown field',
      'listings[3].listingId: duplicate listingId 5 (first at listings[2])',
    ]);
  });

  it('names the shape that is wrong at the top', () => {
    const root = 'the catalog must be a JSON object with "vendors" and "listings" arrays';
    expect(problemsOf(null)).toEqual([root]);
    expect(problemsOf([contractExample()])).toEqual([root]);
    expect(problemsOf({ vendors: {}, listings: 'none' })).toEqual([
      'vendors: must be an array',
      'listings: must be an array',
    ]);
    expect(problemsOf({})).toEqual(['the catalog has no vendors and no listings']);
  });

  it('rejects a rate that is not an object and ids that are not integers', () => {
    const file = contractExample();
    Object.assign(file.vendors[0]!.shipping.P, { international: null });
    Object.assign(file.vendors[0]!, { vendorId: 5.5 });
    expect(problemsOf(file)).toEqual([
      'vendors[0].vendorId: must be an integer greater than 0',
      'vendors[0].shipping.P.international: must be a rate object with first, additional, minDays and maxDays',
      'listings[0].vendorId: vendor 501 is neither in the file nor in the catalog',
    ]);
  });

  it('asks the catalog about a vendor that is not in the file', () => {
    const file = { listings: contractExample().listings };
    const asked: number[] = [];
    const problems = problemsOf(file, (id) => {
      asked.push(id);
      return false;
    });
    expect(asked).toEqual([501]);
    expect(problems).toEqual(['listings[0].vendorId: vendor 501 is neither in the file nor in the catalog']);
  });
});
