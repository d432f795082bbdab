import { z } from 'zod';
import type { CatalogListing, CatalogVendor } from './catalog.js';
import { isCountryCode } from './countries.js';
import { CURRENCIES, toCents } from './money.js';
import type { ShippingMode, Zone } from './pricing.js';
import { UNSTORABLE_TEXT_MESSAGE, unstorableTextPaths } from './storable-text.js';

/** Whether a vendor id already exists in the stored catalog; listings may reference those too. */
export type VendorLookup = (vendorId: number) => boolean;

export type CatalogParseResult =
  { ok: true; vendors: CatalogVendor[]; listings: CatalogListing[] } | { ok: false; problems: string[] };

// A message that says "is required" when the field is absent and `text` for any other bad value.
const says = (text: string) => ({
  error: (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : text),
});

const ID_TEXT = 'must be an integer greater than 0';
const id = () => z.number(says(ID_TEXT)).int(ID_TEXT).positive(ID_TEXT);

const text = (max: number) => {
  const message = `must be a string of 1 to ${max} characters`;
  return z.string(says(message)).trim().min(1, message).max(max, message);
};

/** A JSON decimal with at most two decimals, as integer cents; `minCents` is 0 or 1. */
const amount = (minCents: 0 | 1) => {
  const message = `must be ${minCents === 0 ? 'an amount >= 0' : 'a positive amount'} with at most two decimals`;
  return z.number(says(message)).transform((value, ctx) => {
    const cents = toCents(value);
    if (cents === null || cents < minCents) {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    }
    return cents;
  });
};

const COUNT_TEXT = 'must be an integer >= 0';
const count = () => z.number(says(COUNT_TEXT)).int(COUNT_TEXT).min(0, COUNT_TEXT);

const rateSchema = z
  .strictObject(
    { first: amount(0), additional: amount(0), minDays: count(), maxDays: count() },
    says('must be a rate object with first, additional, minDays and maxDays'),
  )
  .refine((rate) => rate.minDays <= rate.maxDays, {
    path: ['maxDays'],
    message: 'must be >= minDays',
    // Also when an amount of the same rate is bad, so that every problem is listed at once.
    when: ({ value }) => isRecord(value) && isCount(value.minDays) && isCount(value.maxDays),
  });

const zonesSchema = z.strictObject(
  { domestic: rateSchema.optional(), international: rateSchema.optional() },
  says('must be an object of zones (domestic, international)'),
);

const shippingSchema = z.strictObject(
  { S: zonesSchema.optional(), P: zonesSchema.optional() },
  says('must be an object of shipping modes (S, P)'),
);

const COUNTRY_TEXT = 'must be an ISO 3166-1 alpha-3 country code';
const countrySchema = z.string(says(COUNTRY_TEXT)).refine(isCountryCode, COUNTRY_TEXT);

const vendorSchema = z.strictObject(
  {
    vendorId: id(),
    name: text(200),
    country: countrySchema,
    currency: z.enum(CURRENCIES, says(`must be one of ${CURRENCIES.join(', ')}`)),
    shipping: shippingSchema,
  },
  says('must be an object'),
);

// Hyphens and spaces are printed in ISBNs for reading only; they are dropped so one book has one form.
const ISBN_TEXT =
  'must be an ISBN of 10 or 13 digits (an ISBN-10 may end in X; hyphens and spaces are ignored)';
const isbnSchema = z
  .string(says(ISBN_TEXT))
  .transform((isbn) => isbn.replace(/[\s-]/g, '').toUpperCase())
  .refine((isbn) => /^(\d{9}[\dX]|\d{13})$/.test(isbn), ISBN_TEXT);

const listingSchema = z.strictObject(
  {
    listingId: id(),
    vendorId: id(),
    title: text(500),
    isbn: isbnSchema,
    price: amount(1),
    quantity: count(),
  },
  says('must be an object'),
);

/** The catalog file of docs/api.md#catalog; amounts come out as cents. */
export const catalogFileSchema = z
  .strictObject(
    {
      vendors: z.array(vendorSchema, says('must be an array')).default([]),
      listings: z.array(listingSchema, says('must be an array')).default([]),
    },
    { error: () => 'the catalog must be a JSON object with "vendors" and "listings" arrays' },
  )
  .refine(
    (file) => file.vendors.length + file.listings.length > 0,
    'the catalog has no vendors and no listings',
  );

export type CatalogFile = z.output<typeof catalogFileSchema>;

type Problem = { path: (string | number)[]; message: string };

/**
 * Validates a catalog file as a whole: every problem is listed, one readable line each naming its place,
 * or the vendors and listings come out ready for `importCatalog`. A listing may reference a vendor of the
 * file or one `vendorExists` knows.
 */
export function parseCatalog(json: unknown, vendorExists: VendorLookup = () => false): CatalogParseResult {
  const parsed = catalogFileSchema.safeParse(json);
  const problems: Problem[] = parsed.success ? [] : parsed.error.issues.flatMap(toProblems);
  problems.push(...crossCheck(json, vendorExists));
  // Text a store cannot hold (storable-text.ts), so that both stores import the same files.
  problems.push(...unstorableTextPaths(json).map((path) => ({ path, message: UNSTORABLE_TEXT_MESSAGE })));
  if (!parsed.success || problems.length > 0) {
    return { ok: false, problems: problems.sort(byPlace).map(describe) };
  }
  return {
    ok: true,
    vendors: parsed.data.vendors.map(toVendor),
    listings: parsed.data.listings.map(toListing),
  };
}

function toProblems(issue: z.core.$ZodIssue): Problem[] {
  const path = issue.path.filter((part) => typeof part !== 'symbol');
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => ({ path: [...path, key], message: unknownFieldMessage(path) }));
  }
  return [{ path, message: issue.message }];
}

function unknownFieldMessage(parent: (string | number)[]): string {
  if (parent.at(-1) === 'shipping') return 'unknown shipping mode (only S and P)';
  if (parent.at(-2) === 'shipping') return 'unknown zone (only domestic and international)';
  return 'unknown field';
}

/** Checks across records, on the raw input so they are reported even when other fields are bad. */
function crossCheck(json: unknown, vendorExists: VendorLookup): Problem[] {
  const vendors = recordsOf(json, 'vendors');
  const listings = recordsOf(json, 'listings');
  const problems = [
    ...duplicates(vendors, 'vendors', 'vendorId'),
    ...duplicates(listings, 'listings', 'listingId'),
  ];
  const inFile = new Set(vendors.map((vendor) => vendor.vendorId).filter(isId));
  listings.forEach((listing, index) => {
    const vendorId = listing.vendorId;
    if (isId(vendorId) && !inFile.has(vendorId) && !vendorExists(vendorId)) {
      problems.push({
        path: ['listings', index, 'vendorId'],
        message: `vendor ${vendorId} is neither in the file nor in the catalog`,
      });
    }
  });
  return problems;
}

function duplicates(records: Record<string, unknown>[], list: string, key: string): Problem[] {
  const firstAt = new Map<number, number>();
  const problems: Problem[] = [];
  records.forEach((record, index) => {
    const value = record[key];
    if (!isId(value)) return;
    const first = firstAt.get(value);
    if (first === undefined) firstAt.set(value, index);
    else
      problems.push({
        path: [list, index, key],
        message: `duplicate ${key} ${value} (first at ${list}[${first}])`,
      });
  });
  return problems;
}

function recordsOf(json: unknown, key: string): Record<string, unknown>[] {
  const list = isRecord(json) ? json[key] : undefined;
  // Non-object entries keep their index so messages point at the right place.
  return Array.isArray(list) ? list.map((entry) => (isRecord(entry) ? entry : {})) : [];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function isId(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

function toVendor(vendor: CatalogFile['vendors'][number]): CatalogVendor {
  const rates: CatalogVendor['rates'] = [];
  for (const mode of ['S', 'P'] as const satisfies readonly ShippingMode[]) {
    for (const zone of ['domestic', 'international'] as const satisfies readonly Zone[]) {
      const rate = vendor.shipping[mode]?.[zone];
      if (!rate) continue;
      rates.push({
        mode,
        zone,
        rate: {
          firstCents: rate.first,
          additionalCents: rate.additional,
          minDays: rate.minDays,
          maxDays: rate.maxDays,
        },
      });
    }
  }
  return {
    vendorId: vendor.vendorId,
    name: vendor.name,
    country: vendor.country,
    currency: vendor.currency,
    rates,
  };
}

function toListing(listing: CatalogFile['listings'][number]): CatalogListing {
  const { listingId, vendorId, title, isbn, price, quantity } = listing;
  return { listingId, vendorId, title, isbn, priceCents: price, quantity };
}

/** Orders problems by record (root, vendors, listings; then index); the sort is stable within a record. */
function byPlace(a: Problem, b: Problem): number {
  const [listA, indexA] = placeOf(a);
  const [listB, indexB] = placeOf(b);
  return listA - listB || indexA - indexB;
}

function placeOf({ path: [list, index] }: Problem): [number, number] {
  const rank = list === 'vendors' ? 1 : list === 'listings' ? 2 : 0;
  return [rank, typeof index === 'number' ? index : -1];
}

function describe(problem: Problem): string {
  let place = '';
  for (const part of problem.path)
    place += typeof part === 'number' ? `[${part}]` : place ? `.${part}` : part;
  return place ? `${place}: ${problem.message}` : problem.message;
}
