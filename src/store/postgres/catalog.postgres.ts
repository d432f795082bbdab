import type pg from 'pg';
import type { Currency } from '../../domain/money.js';
import type { PricingListing, PricingVendor, ShippingMode, Zone } from '../../domain/pricing.js';
import type { CatalogListing, CatalogStore, CatalogVendor, PricingCatalog } from '../port/store.port.js';
import { withTransaction } from './postgres.pool.js';
import { canBeId } from './postgres.rows.js';

export interface ListingWithVendorRow {
  listing_id: number;
  vendor_id: number;
  title: string;
  isbn: string;
  price_cents: number;
  stock: number;
  country: string;
  currency: Currency;
  active: boolean;
  rates: RateRow[] | null;
}

interface RateRow {
  mode: ShippingMode;
  zone: Zone;
  first_cents: number;
  additional_cents: number;
  min_days: number;
  max_days: number;
}

// One statement: each listing with its vendor and the vendor's rates, all from one snapshot.
export const PRICING_SQL = `
  SELECT l.listing_id, l.vendor_id, l.title, l.isbn, l.price_cents, l.stock, v.country, v.currency, v.active,
         (SELECT json_agg(r) FROM shipping_rates r WHERE r.vendor_id = v.vendor_id) AS rates
    FROM listings l JOIN vendors v ON v.vendor_id = l.vendor_id
   WHERE l.listing_id = ANY($1::bigint[])`;

const toVendor = (r: ListingWithVendorRow): PricingVendor => {
  const vendor: PricingVendor = {
    vendorId: r.vendor_id,
    country: r.country,
    currency: r.currency,
    active: r.active,
    rates: {},
  };
  for (const rate of r.rates ?? []) {
    (vendor.rates[rate.mode] ??= {})[rate.zone] = {
      firstCents: rate.first_cents,
      additionalCents: rate.additional_cents,
      minDays: rate.min_days,
      maxDays: rate.max_days,
    };
  }
  return vendor;
};

/** The last entry per key, sorted by key: a file naming a row twice means its last version, and rows are
 * written (hence locked) in key order like every other writer of listings. */
function lastByKey<T>(rows: readonly T[], key: (row: T) => number): T[] {
  const byKey = new Map<number, T>();
  for (const row of rows) byKey.set(key(row), row);
  return [...byKey.entries()].sort(([a], [b]) => a - b).map(([, row]) => row);
}

async function upsertVendors(tx: pg.PoolClient, vendors: readonly CatalogVendor[]): Promise<void> {
  await tx.query(
    `INSERT INTO vendors (vendor_id, name, country, currency)
     SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[]) AS v(vendor_id, name, country, currency)
      ORDER BY vendor_id
     ON CONFLICT (vendor_id) DO UPDATE
       SET name = excluded.name, country = excluded.country, currency = excluded.currency`,
    [
      vendors.map((v) => v.vendorId),
      vendors.map((v) => v.name),
      vendors.map((v) => v.country),
      vendors.map((v) => v.currency),
    ],
  );
  await tx.query('DELETE FROM shipping_rates WHERE vendor_id = ANY($1::bigint[])', [
    vendors.map((v) => v.vendorId),
  ]);
  const rates = vendors.flatMap((v) => v.rates.map((r) => ({ vendorId: v.vendorId, ...r })));
  await tx.query(
    `INSERT INTO shipping_rates (vendor_id, mode, zone, first_cents, additional_cents, min_days, max_days)
     SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::int[], $7::int[])`,
    [
      rates.map((r) => r.vendorId),
      rates.map((r) => r.mode),
      rates.map((r) => r.zone),
      rates.map((r) => r.rate.firstCents),
      rates.map((r) => r.rate.additionalCents),
      rates.map((r) => r.rate.minDays),
      rates.map((r) => r.rate.maxDays),
    ],
  );
}

async function upsertListings(tx: pg.PoolClient, listings: readonly CatalogListing[]): Promise<void> {
  await tx.query(
    `INSERT INTO listings (listing_id, vendor_id, title, isbn, price_cents, stock)
     SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::int[])
         AS l(listing_id, vendor_id, title, isbn, price_cents, stock)
      ORDER BY listing_id
     ON CONFLICT (listing_id) DO UPDATE
       SET vendor_id = excluded.vendor_id, title = excluded.title, isbn = excluded.isbn,
           price_cents = excluded.price_cents, stock = excluded.stock`,
    [
      listings.map((l) => l.listingId),
      listings.map((l) => l.vendorId),
      listings.map((l) => l.title),
      listings.map((l) => l.isbn),
      listings.map((l) => l.priceCents),
      listings.map((l) => l.quantity),
    ],
  );
}

/** The listings asked for that exist, with their vendors and rates, keyed in the order asked for (as on SQLite). */
export async function readPricingCatalog(
  db: pg.Pool | pg.PoolClient,
  listingIds: readonly number[],
): Promise<PricingCatalog> {
  const ids = [...new Set(listingIds.filter(canBeId))];
  const { rows } = await db.query<ListingWithVendorRow>(PRICING_SQL, [ids]);
  return toPricingCatalog(rows, listingIds);
}

/** PRICING_SQL's rows as pricing reads them, keyed in the order of `listingIds`. */
export function toPricingCatalog(
  rows: readonly ListingWithVendorRow[],
  listingIds: readonly number[],
): PricingCatalog {
  const byId = new Map(rows.map((r) => [r.listing_id, r]));
  const listings = new Map<number, PricingListing>();
  const vendors = new Map<number, PricingVendor>();
  for (const id of listingIds) {
    const r = byId.get(id);
    if (!r || listings.has(id)) continue;
    listings.set(id, {
      listingId: r.listing_id,
      vendorId: r.vendor_id,
      title: r.title,
      isbn: r.isbn,
      priceCents: r.price_cents,
      stock: r.stock,
    });
    if (!vendors.has(r.vendor_id)) vendors.set(r.vendor_id, toVendor(r));
  }
  return { listings, vendors };
}

/** Vendors, their shipping rates and listings with stock. */
export function postgresCatalog(pool: pg.Pool): CatalogStore {
  return {
    loadForPricing: (listingIds) => readPricingCatalog(pool, listingIds),
    async importCatalog(vendors, listings) {
      await withTransaction(pool, async (tx) => {
        await upsertVendors(
          tx,
          lastByKey(vendors, (v) => v.vendorId),
        );
        await upsertListings(
          tx,
          lastByKey(listings, (l) => l.listingId),
        );
      });
    },
    async vendorExists(vendorId) {
      if (!canBeId(vendorId)) return false;
      const { rowCount } = await pool.query('SELECT 1 FROM vendors WHERE vendor_id = $1', [vendorId]);
      return rowCount === 1;
    },
    async deactivateVendor(vendorId) {
      if (!canBeId(vendorId)) return false;
      const { rowCount } = await pool.query('UPDATE vendors SET active = false WHERE vendor_id = $1', [
        vendorId,
      ]);
      return rowCount === 1;
    },
  };
}
