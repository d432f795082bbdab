import { describe, it, expect } from 'vitest';
import type { UsdPer } from '../../src/domain/money.js';
import { loadTaxRules } from '../../src/domain/tax.js';
import {
  priceOrder,
  splitCents,
  splitProportional,
  type PricingInput,
  type PricingLineRequest,
  type PricingListing,
  type PricingVendor,
} from '../../src/domain/pricing.js';

// Rates USD 1.00, EUR 1.08, GBP 1.27; every expected value below is worked out by hand from these fixtures.
const usdPer: UsdPer = { USD: 1_000_000n, EUR: 1_080_000n, GBP: 1_270_000n };
const taxRules = loadTaxRules();

const rate = (firstCents: number, additionalCents: number, minDays: number, maxDays: number) => ({
  firstCents,
  additionalCents,
  minDays,
  maxDays,
});

const vendorList: PricingVendor[] = [
  {
    vendorId: 1,
    country: 'USA',
    currency: 'USD',
    active: true,
    rates: {
      S: { domestic: rate(399, 199, 3, 7), international: rate(1299, 599, 10, 20) },
      P: { domestic: rate(899, 299, 1, 3) },
    },
  },
  {
    vendorId: 2,
    country: 'GBR',
    currency: 'GBP',
    active: true,
    rates: {
      S: { domestic: rate(280, 100, 2, 4), international: rate(950, 350, 7, 14) },
      P: { international: rate(1500, 500, 3, 5) },
    },
  },
  {
    vendorId: 3,
    country: 'DEU',
    currency: 'EUR',
    active: true,
    rates: { S: { domestic: rate(300, 150, 2, 3), international: rate(1000, 400, 5, 10) } },
  },
  { vendorId: 4, country: 'USA', currency: 'USD', active: false, rates: {} },
];

const listing = (listingId: number, vendorId: number, priceCents: number, stock: number): PricingListing => ({
  listingId,
  vendorId,
  title: `Book ${listingId}`,
  isbn: `9780000000${listingId}`,
  priceCents,
  stock,
});

const listingList: PricingListing[] = [
  listing(101, 1, 1999, 10),
  listing(102, 1, 550, 3),
  listing(103, 1, 1001, 1),
  listing(104, 1, 100, 300),
  listing(201, 2, 1000, 5),
  listing(301, 3, 1250, 2),
  listing(401, 4, 1000, 0),
];

function order(overrides: Partial<PricingInput> & { lines: PricingLineRequest[] }): PricingInput {
  return {
    currency: 'USD',
    shippingMode: 'S',
    shipTo: { country: 'USA', provstate: 'CA' },
    listings: new Map(listingList.map((l) => [l.listingId, l])),
    vendors: new Map(vendorList.map((v) => [v.vendorId, v])),
    usdPer,
    taxRules,
    ...overrides,
  };
}

const item = (costCents: number, shipcostCents: number, taxCents: number) => ({
  costCents,
  shipcostCents,
  taxCents,
});

describe('priceOrder, when every item can be bought', () => {
  it('prices a domestic order with state sales tax', () => {
    const result = priceOrder(order({ lines: [{ listingId: 101, quantity: 2 }] }));
    // Shipping 399 + 199 = 598, 299 per item. Tax CA 7.25 % of 3998 + 598 = 4596: 333.21 -> 333.
    // Tax shares on equal weights 2298: 166.5 each, the leftover cent to the first item.
    expect(result.lines).toEqual([
      {
        listingId: 101,
        vendorId: 1,
        title: 'Book 101',
        isbn: '9780000000101',
        quantity: 2,
        unitCostCents: 1999,
        status: 5,
        minDays: 3,
        maxDays: 7,
        items: [item(1999, 299, 167), item(1999, 299, 166)],
      },
    ]);
    expect(result).toMatchObject({
      itemsCents: 3998,
      shippingCents: 598,
      taxCents: 333,
      taxModel: 'SALES_TAX',
      totalCents: 4929, // 3998 + 598 + 333
      purchasableItemCount: 2,
    });
  });

  it('prices an international order with no tax rule, one vendor across two listings', () => {
    const result = priceOrder(
      order({
        shipTo: { country: 'JPN' },
        lines: [
          { listingId: 101, quantity: 1 },
          { listingId: 102, quantity: 2 },
        ],
      }),
    );
    // Vendor 1 has 3 copies: 1299 + 599 × 2 = 2497; 2497 / 3 = 832 r 1, the leftover cent to the first item.
    expect(result.lines.map((l) => l.items)).toEqual([
      [item(1999, 833, 0)],
      [item(550, 832, 0), item(550, 832, 0)],
    ]);
    expect(result.lines.map((l) => [l.status, l.minDays, l.maxDays])).toEqual([
      [5, 10, 20],
      [5, 10, 20],
    ]);
    expect(result).toMatchObject({
      itemsCents: 3099, // 1999 + 550 × 2
      shippingCents: 2497,
      taxCents: null,
      taxModel: null,
      totalCents: 5596, // 3099 + 2497
      purchasableItemCount: 3,
    });
  });

  it('converts a GBP vendor on a USD order, rounding half cents away from zero', () => {
    const result = priceOrder(
      order({ shipTo: { country: 'USA', provstate: 'NY' }, lines: [{ listingId: 201, quantity: 2 }] }),
    );
    // unitCost 1000 × 1.27 = 1270; first 950 × 1.27 = 1206.5 -> 1207; additional 350 × 1.27 = 444.5 -> 445.
    // Shipping 1207 + 445 = 1652, 826 each. Tax NY 4 % of 2540 + 1652 = 4192: 167.68 -> 168, 84 each.
    expect(result.lines[0]).toMatchObject({ unitCostCents: 1270, status: 5, minDays: 7, maxDays: 14 });
    expect(result.lines[0]?.items).toEqual([item(1270, 826, 84), item(1270, 826, 84)]);
    expect(result).toMatchObject({
      itemsCents: 2540,
      shippingCents: 1652,
      taxCents: 168,
      taxModel: 'SALES_TAX',
      totalCents: 4360, // 2540 + 1652 + 168
      purchasableItemCount: 2,
    });
  });

  it('converts a GBP vendor on a EUR order with German VAT', () => {
    const result = priceOrder(
      order({ currency: 'EUR', shipTo: { country: 'DEU' }, lines: [{ listingId: 201, quantity: 1 }] }),
    );
    // unitCost 1000 × 1.27 / 1.08 = 1175.93 -> 1176; first 950 × 1.27 / 1.08 = 1117.13 -> 1117.
    // Tax DEU 7 % of 1176 + 1117 = 2293: 160.51 -> 161.
    expect(result.lines[0]?.items).toEqual([item(1176, 1117, 161)]);
    expect(result).toMatchObject({
      itemsCents: 1176,
      shippingCents: 1117,
      taxCents: 161,
      taxModel: 'VAT',
      totalCents: 2454, // 1176 + 1117 + 161
    });
  });

  it('prices a multi-vendor, multi-currency order, splitting the tax by largest remainder', () => {
    const result = priceOrder(
      order({
        currency: 'EUR',
        shipTo: { country: 'FRA' },
        lines: [
          { listingId: 101, quantity: 1 },
          { listingId: 301, quantity: 2 },
          { listingId: 201, quantity: 1 },
        ],
      }),
    );
    // USD vendor: 1999 / 1.08 = 1850.93 -> 1851, first 1299 / 1.08 = 1202.78 -> 1203.
    // EUR vendor: 1250, shipping 1000 + 400 = 1400. GBP vendor: 1176, first 1117 (as above).
    // Shipping 1203 + 1400 + 1117 = 3720, 930 per item. Items 1851 + 2500 + 1176 = 5527.
    // Tax FRA 5.5 % of 9247: 508.585 -> 509. Exact shares 509 × weight / 9247:
    // 2781 -> 153.080, 2180 -> 119.998, 2180 -> 119.998, 2106 -> 115.925; floors sum to 506, and the
    // 3 leftover cents go to the largest remainders: [153, 120, 120, 116].
    expect(result.lines.map((l) => l.items)).toEqual([
      [item(1851, 930, 153)],
      [item(1250, 930, 120), item(1250, 930, 120)],
      [item(1176, 930, 116)],
    ]);
    expect(result.lines.map((l) => [l.vendorId, l.unitCostCents, l.minDays, l.maxDays])).toEqual([
      [1, 1851, 10, 20],
      [3, 1250, 5, 10],
      [2, 1176, 7, 14],
    ]);
    expect(result).toMatchObject({
      itemsCents: 5527,
      shippingCents: 3720,
      taxCents: 509,
      taxModel: 'VAT',
      totalCents: 9756, // 5527 + 3720 + 509
      purchasableItemCount: 4,
    });
  });

  it('charges GBR VAT at 0 % and reports the model', () => {
    const result = priceOrder(
      order({ currency: 'GBP', shipTo: { country: 'GBR' }, lines: [{ listingId: 201, quantity: 1 }] }),
    );
    // Domestic GBP: 1000 + 280 shipping, 0 % tax.
    expect(result.lines[0]?.items).toEqual([item(1000, 280, 0)]);
    expect(result).toMatchObject({ taxCents: 0, taxModel: 'VAT', totalCents: 1280 });
  });

  it('has no tax for a US address without provstate', () => {
    const result = priceOrder(
      order({ shipTo: { country: 'USA', provstate: null }, lines: [{ listingId: 101, quantity: 1 }] }),
    );
    // 1999 + 399, no rule.
    expect(result).toMatchObject({ taxCents: null, taxModel: null, totalCents: 2398 });
    expect(result.lines[0]?.items).toEqual([item(1999, 399, 0)]);
  });

  it('rounds an exact half cent of tax away from zero', () => {
    const result = priceOrder(
      order({ shipTo: { country: 'USA', provstate: 'TX' }, lines: [{ listingId: 103, quantity: 1 }] }),
    );
    // TX 6.25 % of 1001 + 399 = 1400: 87.5 -> 88.
    expect(result.lines[0]?.items).toEqual([item(1001, 399, 88)]);
    expect(result).toMatchObject({ taxCents: 88, totalCents: 1488 });
  });

  it('prices 250 copies of one listing, to the cent', () => {
    const result = priceOrder(
      order({ shipTo: { country: 'USA', provstate: 'TX' }, lines: [{ listingId: 104, quantity: 250 }] }),
    );
    // Shipping 399 + 199 × 249 = 49950; 49950 / 250 = 199 r 200: the first 200 items 200, the last 50 199.
    // Items 25000; tax TX 6.25 % of 74950 = 4684.375 -> 4684. Weights 300 (×200) and 299 (×50):
    // exact shares 18.748 and 18.686, floors 18 × 250 = 4500, 184 leftover cents to the 300-weight items
    // in order: items 0–183 pay 19, items 184–249 pay 18.
    const items = result.lines[0]?.items ?? [];
    expect(items).toHaveLength(250);
    expect(items.slice(0, 184).every((i) => i.shipcostCents === 200 && i.taxCents === 19)).toBe(true);
    expect(items.slice(184, 200).every((i) => i.shipcostCents === 200 && i.taxCents === 18)).toBe(true);
    expect(items.slice(200).every((i) => i.shipcostCents === 199 && i.taxCents === 18)).toBe(true);
    expect(items.every((i) => i.costCents === 100)).toBe(true);
    expect(result).toMatchObject({
      itemsCents: 25000,
      shippingCents: 49950,
      taxCents: 4684,
      totalCents: 79634, // 25000 + 49950 + 4684
      purchasableItemCount: 250,
    });
  });
});

describe('priceOrder, when items cannot be bought', () => {
  it('marks every item of an inactive vendor 54, even with no rate and no stock', () => {
    const result = priceOrder(order({ lines: [{ listingId: 401, quantity: 2 }] }));
    // Nothing bought; CA has a rule, so tax is 0 rather than absent.
    expect(result.lines[0]).toMatchObject({ status: 54, unitCostCents: 1000, minDays: null, maxDays: null });
    expect(result.lines[0]?.items).toEqual([item(1000, 0, 0), item(1000, 0, 0)]);
    expect(result).toMatchObject({
      itemsCents: 0,
      shippingCents: 0,
      taxCents: 0,
      taxModel: 'SALES_TAX',
      totalCents: 0,
      purchasableItemCount: 0,
    });
  });

  it('marks 14 when the mode and zone are not offered', () => {
    // Vendor 1 has no priority international rate; vendor 2 no priority domestic one.
    const abroad = priceOrder(
      order({ shippingMode: 'P', shipTo: { country: 'JPN' }, lines: [{ listingId: 101, quantity: 1 }] }),
    );
    expect(abroad.lines[0]).toMatchObject({ status: 14, minDays: null, maxDays: null });
    expect(abroad.lines[0]?.items).toEqual([item(1999, 0, 0)]);
    expect(abroad).toMatchObject({ taxCents: null, taxModel: null, totalCents: 0 });
    const home = priceOrder(
      order({
        currency: 'GBP',
        shippingMode: 'P',
        shipTo: { country: 'GBR' },
        lines: [{ listingId: 201, quantity: 1 }],
      }),
    );
    expect(home.lines[0]?.status).toBe(14);
  });

  it('marks 14 when stock is below quantity, and buys when it equals quantity', () => {
    const result = priceOrder(
      order({
        shipTo: { country: 'USA', provstate: null },
        lines: [
          { listingId: 102, quantity: 4 },
          { listingId: 103, quantity: 1 },
        ],
      }),
    );
    // 102 has 3 in stock; 103 has exactly 1: shipping 399 for its one copy.
    expect(result.lines.map((l) => l.status)).toEqual([14, 5]);
    expect(result.lines[0]?.items).toEqual(Array(4).fill(item(550, 0, 0)));
    expect(result).toMatchObject({ itemsCents: 1001, shippingCents: 399, totalCents: 1400 });
  });

  it('buys when unitCost + first equals maxPrice and marks 53 one cent under', () => {
    const at = (maxPriceCents: number) =>
      priceOrder(order({ lines: [{ listingId: 101, quantity: 1, maxPriceCents }] }));
    // 1999 + 399 = 2398.
    expect(at(2398).lines[0]?.status).toBe(5);
    const over = at(2397);
    expect(over.lines[0]).toMatchObject({ status: 53, minDays: 3, maxDays: 7 });
    expect(over.lines[0]?.items).toEqual([item(1999, 0, 0)]);
    expect(over).toMatchObject({ itemsCents: 0, shippingCents: 0, taxCents: 0, totalCents: 0 });
  });

  it('compares maxPrice with converted costs', () => {
    const at = (maxPriceCents: number) =>
      priceOrder(order({ lines: [{ listingId: 201, quantity: 1, maxPriceCents }] })).lines[0]?.status;
    // GBP 1000 + 950 -> USD 1270 + 1207 = 2477.
    expect(at(2477)).toBe(5);
    expect(at(2476)).toBe(53);
  });

  it('leaves a copy rejected for maxPrice out of its vendor shipping', () => {
    const result = priceOrder(
      order({
        shipTo: { country: 'USA', provstate: null },
        lines: [
          { listingId: 101, quantity: 1, maxPriceCents: 2000 },
          { listingId: 102, quantity: 2 },
        ],
      }),
    );
    // 1999 + 399 > 2000: 53. Vendor 1 ships 2 copies: 399 + 199 = 598, 299 each.
    expect(result.lines.map((l) => l.status)).toEqual([53, 5]);
    expect(result.lines[1]?.items).toEqual([item(550, 299, 0), item(550, 299, 0)]);
    expect(result).toMatchObject({ itemsCents: 1100, shippingCents: 598, totalCents: 1698 });
  });
});

describe('priceOrder with totalMaxPrice', () => {
  const lines: PricingLineRequest[] = [
    { listingId: 101, quantity: 2 },
    { listingId: 102, quantity: 5 },
    { listingId: 401, quantity: 1 },
  ];

  it('buys when the total equals totalMaxPrice', () => {
    const result = priceOrder(order({ totalMaxPriceCents: 4929, lines }));
    // As the domestic order: 3998 + 598 + 333 = 4929; 102 is short of stock (14), 401 inactive (54).
    expect(result.lines.map((l) => l.status)).toEqual([5, 14, 54]);
    expect(result.lines[0]?.items).toEqual([item(1999, 299, 167), item(1999, 299, 166)]);
    expect(result).toMatchObject({ totalCents: 4929, purchasableItemCount: 2 });
  });

  it('marks the would-be purchases 55 one cent under, the others keeping their code, and buys nothing', () => {
    const result = priceOrder(order({ totalMaxPriceCents: 4928, lines }));
    expect(result.lines.map((l) => l.status)).toEqual([55, 14, 54]);
    expect(result.lines.map((l) => l.items)).toEqual([
      [item(1999, 0, 0), item(1999, 0, 0)],
      Array(5).fill(item(550, 0, 0)),
      [item(1000, 0, 0)],
    ]);
    expect(result).toEqual(
      expect.objectContaining({
        itemsCents: 0,
        shippingCents: 0,
        taxCents: 0,
        taxModel: 'SALES_TAX',
        totalCents: 0,
        purchasableItemCount: 0,
      }),
    );
  });

  it('reports tax as absent when over totalMaxPrice with no rule', () => {
    const result = priceOrder(
      order({
        shipTo: { country: 'JPN' },
        totalMaxPriceCents: 100,
        lines: [{ listingId: 101, quantity: 1 }],
      }),
    );
    expect(result.lines[0]?.status).toBe(55);
    expect(result).toMatchObject({ taxCents: null, taxModel: null, totalCents: 0 });
  });
});

describe('priceOrder input errors', () => {
  it('refuses a non-positive quantity and a listing missing from the input', () => {
    expect(() => priceOrder(order({ lines: [{ listingId: 101, quantity: 0 }] }))).toThrow(RangeError);
    expect(() => priceOrder(order({ lines: [{ listingId: 999, quantity: 1 }] }))).toThrow(/999/);
    const orphan = listing(901, 9, 100, 1);
    const listings = new Map([[orphan.listingId, orphan]]);
    expect(() => priceOrder(order({ listings, lines: [{ listingId: 901, quantity: 1 }] }))).toThrow(
      new Error('vendor 9 is missing from the pricing input'),
    );
  });

  it('refuses a quantity of 0, negative or fractional next to a valid line', () => {
    for (const quantity of [0, -1, 1.5]) {
      const lines = [
        { listingId: 101, quantity: 1 },
        { listingId: 102, quantity },
      ];
      expect(() => priceOrder(order({ lines })), String(quantity)).toThrow(
        new RangeError(`quantity must be a positive integer, got ${quantity}`),
      );
    }
  });
});

describe('splitCents', () => {
  it('gives the leftover cents to the first shares', () => {
    expect(splitCents(10, 3)).toEqual([4, 3, 3]);
    expect(splitCents(11, 3)).toEqual([4, 4, 3]);
    expect(splitCents(9, 3)).toEqual([3, 3, 3]);
    expect(splitCents(2, 5)).toEqual([1, 1, 0, 0, 0]);
    expect(splitCents(5, 1)).toEqual([5]);
    expect(splitCents(0, 2)).toEqual([0, 0]);
    expect(splitCents(0, 0)).toEqual([]);
  });

  it('refuses to split cents into no shares', () => {
    expect(() => splitCents(1, 0)).toThrow(new RangeError('cannot split 1 cents into no shares'));
    expect(() => splitCents(1.5, 2)).toThrow(new RangeError('total must be integer cents, got 1.5'));
  });

  it('refuses a negative or fractional number of shares, whatever the total', () => {
    expect(() => splitCents(5, -1)).toThrow(new RangeError('n must be a non-negative integer, got -1'));
    expect(() => splitCents(0, -1)).toThrow(RangeError);
    expect(() => splitCents(5, 1.5)).toThrow(RangeError);
  });
});

describe('splitProportional', () => {
  it('splits by largest remainder, ties to the earlier share', () => {
    expect(splitProportional(10, [1, 1, 1])).toEqual([4, 3, 3]); // 3.33 each
    expect(splitProportional(100, [1, 2])).toEqual([33, 67]); // 33.33, 66.67
    expect(splitProportional(10, [3, 1, 6])).toEqual([3, 1, 6]); // exact
    expect(splitProportional(5, [0, 3])).toEqual([0, 5]);
    expect(splitProportional(1, [1, 3])).toEqual([0, 1]); // 0.25, 0.75
  });

  it('splits zero, and splits evenly when every weight is zero', () => {
    expect(splitProportional(0, [5, 5])).toEqual([0, 0]);
    expect(splitProportional(7, [0, 0])).toEqual([4, 3]);
    expect(splitProportional(0, [])).toEqual([]);
  });

  it('sums exactly to a negative total', () => {
    expect(splitProportional(-10, [1, 1, 1])).toEqual([-3, -3, -4]); // floors -4, remainders to the first two
  });

  it('refuses negative or fractional weights', () => {
    const badWeights = new RangeError('weights must be non-negative integers');
    expect(() => splitProportional(10, [1, -1])).toThrow(badWeights);
    expect(() => splitProportional(10, [0.5, 1])).toThrow(badWeights);
    expect(() => splitProportional(1.5, [1])).toThrow(new RangeError('total must be integer cents, got 1.5'));
    expect(() => splitProportional(1.5, [0, 0])).toThrow(RangeError);
  });
});
