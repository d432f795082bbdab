import type { Currency } from '../../domain/money.js';
import type { PricingListing, PricingVendor, ShippingMode, Zone } from '../../domain/pricing.js';
import type { CatalogStore, PricingCatalog } from '../store.port.js';
import type { Db } from './sqlite.db.js';

/** A listing with its vendor and the vendor's rates as a JSON array of [mode, zone, first, additional, min, max]. */
interface PricedListingRow {
  listing_id: number;
  vendor_id: number;
  title: string;
  isbn: string;
  price_cents: number;
  stock: number;
  country: string;
  currency: Currency;
  active: number;
  rates: string;
}

type RateTuple = [ShippingMode, Zone, number, number, number, number];

/** Vendors, their shipping rates and listings with stock. */
export function sqliteCatalog(db: Db): CatalogStore {
  // One statement for a listing, its vendor and the vendor's rates: a third of the time of a listing read and a
  // join of the vendor with its rates (a row per rate).
  const pricedListing = db.prepare<[number], PricedListingRow>(
    `SELECT l.listing_id, l.vendor_id, l.title, l.isbn, l.price_cents, l.stock, v.country, v.currency, v.active,
            (SELECT json_group_array(json_array(r.mode, r.zone, r.first_cents, r.additional_cents, r.min_days,
                                                r.max_days))
               FROM shipping_rates r WHERE r.vendor_id = v.vendor_id) AS rates
       FROM listings l JOIN vendors v ON v.vendor_id = l.vendor_id
      WHERE l.listing_id = ?`,
  );
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

  function vendorOf(row: PricedListingRow): PricingVendor {
    const vendor: PricingVendor = {
      vendorId: row.vendor_id,
      country: row.country,
      currency: row.currency,
      active: row.active === 1,
      rates: {},
    };
    for (const [mode, zone, firstCents, additionalCents, minDays, maxDays] of JSON.parse(
      row.rates,
    ) as RateTuple[])
      (vendor.rates[mode] ??= {})[zone] = { firstCents, additionalCents, minDays, maxDays };
    return vendor;
  }

  return {
    /** The listings asked for (those that exist) and their vendors, as pricing reads them. */
    async loadForPricing(listingIds) {
      const listings = new Map<number, PricingListing>();
      const vendors = new Map<number, PricingVendor>();
      for (const id of listingIds) {
        const row = pricedListing.get(id);
        if (!row) continue;
        listings.set(id, {
          listingId: row.listing_id,
          vendorId: row.vendor_id,
          title: row.title,
          isbn: row.isbn,
          priceCents: row.price_cents,
          stock: row.stock,
        });
        if (!vendors.has(row.vendor_id)) vendors.set(row.vendor_id, vendorOf(row));
      }
      return { listings, vendors } satisfies PricingCatalog;
    },
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
