import type { Currency } from '../../domain/money.js';
import type { PricingListing, PricingVendor, ShippingMode, Zone } from '../../domain/pricing.js';
import type { CatalogStore, PricingCatalog } from '../port/store.port.js';
import type { Db } from './sqlite.db.js';

/**
 * A listing in pricing's shape, its vendor's country, currency and active flag, and the vendor's rates as
 * [mode, zone, firstCents, additionalCents, minDays, maxDays].
 */
type PricedListing = [
  listing: PricingListing,
  country: string,
  currency: Currency,
  active: number,
  rates: [ShippingMode, Zone, number, number, number | null, number | null][],
];

/** Reads the listings asked for (those that exist) and their vendors, as pricing reads them; synchronous. */
export function pricingCatalogReader(db: Db): (listingIds: readonly number[]) => PricingCatalog {
  // One statement for a listing, its vendor and the vendor's rates, as one JSON value parsed by JSON.parse: a
  // fraction of the instructions of rows read as arrays, which better-sqlite3 builds one element at a time
  // (orderReader in orders.sqlite.ts).
  const pricedListing = db
    .prepare<[number], string>(
      `SELECT json_array(
           json_object('listingId', l.listing_id, 'vendorId', l.vendor_id, 'title', l.title, 'isbn', l.isbn,
                       'priceCents', l.price_cents, 'stock', l.stock),
           v.country, v.currency, v.active,
           (SELECT json_group_array(json_array(r.mode, r.zone, r.first_cents, r.additional_cents, r.min_days,
                                               r.max_days))
              FROM shipping_rates r WHERE r.vendor_id = v.vendor_id))
         FROM listings l JOIN vendors v ON v.vendor_id = l.vendor_id
        WHERE l.listing_id = ?`,
    )
    .pluck();

  function vendorOf([listing, country, currency, active, rates]: PricedListing): PricingVendor {
    const vendor: PricingVendor = {
      vendorId: listing.vendorId,
      country,
      currency,
      active: active === 1,
      rates: {},
    };
    for (const [mode, zone, firstCents, additionalCents, minDays, maxDays] of rates) {
      (vendor.rates[mode] ??= {})[zone] = {
        firstCents,
        additionalCents,
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
      const found = pricedListing.get(id);
      if (found === undefined) continue;
      const priced = JSON.parse(found) as PricedListing;
      const listing = priced[0];
      listings.set(id, listing);
      if (!vendors.has(listing.vendorId)) vendors.set(listing.vendorId, vendorOf(priced));
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
