import type { Currency } from '../../domain/money.js';
import type { PricingListing, PricingVendor, ShippingMode, Zone } from '../../domain/pricing.js';
import type { CatalogStore, PricingCatalog } from '../store.port.js';
import type { Db } from './sqlite.db.js';

interface ListingRow {
  listing_id: number;
  vendor_id: number;
  title: string;
  isbn: string;
  price_cents: number;
  stock: number;
}

interface VendorRateRow {
  vendor_id: number;
  country: string;
  currency: Currency;
  active: number;
  mode: ShippingMode | null;
  zone: Zone | null;
  first_cents: number | null;
  additional_cents: number | null;
  min_days: number | null;
  max_days: number | null;
}

/** Vendors, their shipping rates and listings with stock. */
export function sqliteCatalog(db: Db): CatalogStore {
  const listingById = db.prepare<[number], ListingRow>('SELECT * FROM listings WHERE listing_id = ?');
  const vendorWithRates = db.prepare<[number], VendorRateRow>(
    `SELECT v.vendor_id, v.country, v.currency, v.active, r.mode, r.zone, r.first_cents, r.additional_cents,
            r.min_days, r.max_days
       FROM vendors v LEFT JOIN shipping_rates r ON r.vendor_id = v.vendor_id
      WHERE v.vendor_id = ?`,
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

  function loadVendor(vendorId: number): PricingVendor | null {
    const rows = vendorWithRates.all(vendorId);
    const head = rows[0];
    if (!head) return null;
    const vendor: PricingVendor = {
      vendorId,
      country: head.country,
      currency: head.currency,
      active: head.active === 1,
      rates: {},
    };
    for (const r of rows) {
      if (r.mode === null || r.zone === null) continue;
      (vendor.rates[r.mode] ??= {})[r.zone] = {
        firstCents: r.first_cents!,
        additionalCents: r.additional_cents!,
        minDays: r.min_days!,
        maxDays: r.max_days!,
      };
    }
    return vendor;
  }

  return {
    /** The listings asked for (those that exist) and their vendors, as pricing reads them. */
    async loadForPricing(listingIds) {
      const listings = new Map<number, PricingListing>();
      const vendors = new Map<number, PricingVendor>();
      for (const id of listingIds) {
        const row = listingById.get(id);
        if (!row) continue;
        listings.set(id, {
          listingId: row.listing_id,
          vendorId: row.vendor_id,
          title: row.title,
          isbn: row.isbn,
          priceCents: row.price_cents,
          stock: row.stock,
        });
        if (!vendors.has(row.vendor_id)) {
          const vendor = loadVendor(row.vendor_id);
          if (vendor) vendors.set(row.vendor_id, vendor);
        }
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
