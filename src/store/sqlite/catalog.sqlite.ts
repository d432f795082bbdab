import type { Currency } from '../../domain/money.js';
import type { PricingListing, PricingVendor, ShippingMode, Zone } from '../../domain/pricing.js';
import type { CatalogStore, PricingCatalog } from '../port/store.port.js';
import type { Db } from './sqlite.db.js';

/** A listing with its vendor and one of the vendor's rates (nulls when it has none), by position. */
type PricedListingRow = [
  listingId: number,
  vendorId: number,
  title: string,
  isbn: string,
  priceCents: number,
  stock: number,
  country: string,
  currency: Currency,
  active: number,
  mode: ShippingMode | null,
  zone: Zone | null,
  firstCents: number | null,
  additionalCents: number | null,
  minDays: number | null,
  maxDays: number | null,
];

/** Reads the listings asked for (those that exist) and their vendors, as pricing reads them; synchronous. */
export function pricingCatalogReader(db: Db): (listingIds: readonly number[]) => PricingCatalog {
  // One statement for a listing, its vendor and the vendor's rates (a row per rate), read as arrays: less than
  // half the time of a listing read and then a vendor read.
  const pricedListing = db
    .prepare<[number], PricedListingRow>(
      `SELECT l.listing_id, l.vendor_id, l.title, l.isbn, l.price_cents, l.stock, v.country, v.currency, v.active,
              r.mode, r.zone, r.first_cents, r.additional_cents, r.min_days, r.max_days
         FROM listings l JOIN vendors v ON v.vendor_id = l.vendor_id
         LEFT JOIN shipping_rates r ON r.vendor_id = v.vendor_id
        WHERE l.listing_id = ?`,
    )
    .raw();

  function vendorOf(rows: PricedListingRow[]): PricingVendor {
    const [, vendorId, , , , , country, currency, active] = rows[0]!;
    const vendor: PricingVendor = { vendorId, country, currency, active: active === 1, rates: {} };
    for (const [, , , , , , , , , mode, zone, firstCents, additionalCents, minDays, maxDays] of rows) {
      if (mode === null || zone === null) continue;
      (vendor.rates[mode] ??= {})[zone] = {
        firstCents: firstCents!,
        additionalCents: additionalCents!,
        minDays: minDays!,
        maxDays: maxDays!,
      };
    }
    return vendor;
  }

  return (listingIds) => {
    const listings = new Map<number, PricingListing>();
    const vendors = new Map<number, PricingVendor>();
    for (const id of listingIds) {
      if (listings.has(id)) continue;
      const rows = pricedListing.all(id);
      if (rows.length === 0) continue;
      const [listingId, vendorId, title, isbn, priceCents, stock] = rows[0]!;
      listings.set(id, { listingId, vendorId, title, isbn, priceCents, stock });
      if (!vendors.has(vendorId)) vendors.set(vendorId, vendorOf(rows));
    }
    return { listings, vendors };
  };
}

/** Vendors, their shipping rates and listings with stock. */
export function sqliteCatalog(db: Db): CatalogStore {
  const readPricingCatalog = pricingCatalogReader(db);
  const upsertVendor = db.prepare(
    `INSERT INTO vendors (vendor_id, name, country, currency) VALUES (@vendorId, @name, @country, @currency)
     ON CONFLICT (vendor_id) DO UPDATE SET name = excluded.name, country = excluded.country,
       currency = excluded.currency`,
  );
  const deleteRates = db.prepare('DELETE FROM shipping_rates WHERE vendor_id = ?');
  const insertRate = db.prepare(
    `INSERT INTO shipping_rates (vendor_id, mode, zone, first_cents, additional_cents, min_days, max_days)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const upsertListing = db.prepare(
    `INSERT INTO listings (listing_id, vendor_id, title, isbn, price_cents, stock)
     VALUES (@listingId, @vendorId, @title, @isbn, @priceCents, @quantity)
     ON CONFLICT (listing_id) DO UPDATE SET vendor_id = excluded.vendor_id, title = excluded.title,
       isbn = excluded.isbn, price_cents = excluded.price_cents, stock = excluded.stock`,
  );
  const deactivate = db.prepare<[number], { vendor_id: number }>(
    'UPDATE vendors SET active = 0 WHERE vendor_id = ? RETURNING vendor_id',
  );
  const vendorExists = db.prepare<[number], { one: number }>(
    'SELECT 1 AS one FROM vendors WHERE vendor_id = ?',
  );

  return {
    /** The listings asked for (those that exist) and their vendors, as pricing reads them. */
    loadForPricing: async (listingIds) => readPricingCatalog(listingIds),
    /** Upserts a whole validated catalog in one transaction; a vendor's rates are replaced by the file's. */
    async importCatalog(vendors, listings) {
      db.transaction(() => {
        for (const v of vendors) {
          upsertVendor.run(v);
          deleteRates.run(v.vendorId);
          for (const { mode, zone, rate } of v.rates) {
            insertRate.run(
              v.vendorId,
              mode,
              zone,
              rate.firstCents,
              rate.additionalCents,
              rate.minDays,
              rate.maxDays,
            );
          }
        }
        for (const l of listings) upsertListing.run(l);
      }).immediate();
    },
    async vendorExists(vendorId) {
      return vendorExists.get(vendorId) !== undefined;
    },
    async deactivateVendor(vendorId) {
      return deactivate.get(vendorId) !== undefined;
    },
  };
}
