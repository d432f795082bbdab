import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ITEMS_PER_READ, orderCost, readCost } from '../../src/http/order-cost.js';
import { pageLength } from '../../src/store/shared/search-plan.js';

const sum = (list: readonly number[]) => list.reduce((a, b) => a + b, 0);

describe('readCost: what a search page or a got order costs against the rate limit', () => {
  it(`is one per ${ITEMS_PER_READ} items returned, rounded up, at least one`, () => {
    expect([0, 1, 10, 11, 20, 250, 500].map(readCost)).toEqual([1, 1, 1, 2, 2, 25, 50]);
    fc.assert(
      fc.property(fc.nat(100_000), (items) => {
        const cost = readCost(items);
        expect(cost).toBeGreaterThanOrEqual(1);
        expect(cost).toBe(Math.max(1, Math.ceil(items / ITEMS_PER_READ)));
        // Never cheaper for more items, and never more than an item's worth per item.
        expect(readCost(items + 1)).toBeGreaterThanOrEqual(cost);
        expect(cost).toBeLessThanOrEqual(Math.max(1, items));
      }),
    );
  });

  it('charges reading an order back less than placing it: 250 items read cost 25, placed 250', () => {
    expect(readCost(250)).toBe(25);
    expect(orderCost({ listings: [{ quantity: 250 }] })).toBe(250);
  });
});

describe("pageLength: where a search's page ends", () => {
  const counts = fc.array(fc.integer({ min: 1, max: 250 }), { maxLength: 101 });

  it('keeps at most `limit` orders, and none that would take the page past `maxItems`, but always the first', () => {
    fc.assert(
      fc.property(counts, fc.integer({ min: 1, max: 100 }), fc.nat(3000), (items, limit, maxItems) => {
        const n = pageLength(items, limit, maxItems);
        const most = Math.min(limit, items.length);
        expect(n).toBeLessThanOrEqual(most);
        expect(n).toBeGreaterThanOrEqual(Math.min(1, most));
        // Within the size, unless one order alone is larger.
        if (n > 1) expect(sum(items.slice(0, n))).toBeLessThanOrEqual(maxItems);
        // Ended early only when the next order would not fit.
        if (n < most) expect(sum(items.slice(0, n + 1))).toBeGreaterThan(maxItems);
      }),
    );
  });

  it('is `limit` orders when no size is given, and cuts a page of large orders at the size', () => {
    expect(pageLength([250, 250, 250], 2)).toBe(2);
    expect(pageLength(Array<number>(101).fill(250), 100, 500)).toBe(2);
    expect(pageLength([250, 1], 100, 100)).toBe(1);
    expect(pageLength([], 20, 1000)).toBe(0);
  });
});
