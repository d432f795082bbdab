import { UNSETTLED_BY_AGE_MIGRATION } from '../shared/unsettled-by-age.migration.js';
import { UNSETTLED_PER_CLIENT_MIGRATION } from '../shared/unsettled-per-client.migration.js';
import { DELIVERY_CLAIMS_MIGRATION } from './delivery-claims.migration.js';
import { EVENT_TYPE_MIGRATION } from './event-type.migration.js';
import { PAYMENT_TARGET_MIGRATION } from './payment-target.migration.js';
import type { MigrationContext } from '../secrets/store-secrets.js';
import { ITEMS_UPDATED_MIGRATION } from './items-updated.migration.js';
import { LIFECYCLE_MIGRATION } from './lifecycle.migration.js';
import { SEARCH_MIGRATION } from './search.migration.js';
import { TRACE_CONTEXT_MIGRATION } from './trace-context.migration.js';
import { RETENTION_MIGRATION } from '../shared/retention.migration.js';
import { eventItemStatesMigration } from '../shared/event-snapshot.js';
import { SECRETS_MIGRATION } from './secrets.migration.js';
import { WEBHOOKS_MIGRATION } from './webhooks.migration.js';
import { UNSETTLED_ITEMS_MIGRATION } from './unsettled-items.migration.js';
import { SECRET_ROLL_MIGRATION_NAME, secretRollSql } from '../shared/secret-roll.migration.js';
import type { Db } from './sqlite.db.js';

/**
 * One schema version: its SQL, then code when rows must be rewritten too (in the same transaction), both cheap
 * at any size; what scans or rewrites a large table is its `step`, which `admin migrate` runs in batches.
 */
export interface SqliteMigration {
  version: number;
  name: string;
  sql?: string;
  run?(db: Db, ctx: MigrationContext): void;
  /** Whether processes that do not know it may run beside it (PendingMigration in migrations.port.ts). */
  besideOlder: boolean;
  step?: SqliteMigrationStep;
}

/**
 * The heavy part of a migration: batches over the orders that existed when the migration was applied (by id,
 * each its own transaction, so processes of the file write between them), then `finish` in one transaction. On a
 * store without orders it is all done inside the migration.
 */
export interface SqliteMigrationStep {
  /** Processes start and serve right before it is done; false: they refuse to start until it is. */
  servesBefore: boolean;
  /** The orders after `from` up to `to` (ids, inclusive); absent: the step is its `finish` alone. */
  batch?(db: Db, from: number, to: number): void;
  finish?(db: Db): void;
}

/**
 * Versioned schema migrations, applied in order, each once. `besideOlder`: can a process of an earlier release,
 * which does not know the migration, run on the schema with it (each judged in docs/operating.md, Releases side by
 * side)? The first ones, older than every release still supported, are judged as they stood when they came.
 */
export const MIGRATIONS: readonly SqliteMigration[] = [
  {
    version: 1,
    name: 'initial schema for the whole contract',
    besideOlder: true,
    sql: `
      CREATE TABLE clients (
        client_id   INTEGER PRIMARY KEY,
        name        TEXT    NOT NULL,
        access_key  TEXT    NOT NULL UNIQUE,
        secret_key  TEXT    NOT NULL,
        disabled    INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
        created_at  INTEGER NOT NULL
      );

      CREATE TABLE cards (
        card_id     INTEGER PRIMARY KEY,
        client_id   INTEGER NOT NULL REFERENCES clients (client_id),
        token       TEXT    NOT NULL UNIQUE,
        declines    INTEGER NOT NULL DEFAULT 0 CHECK (declines IN (0, 1)),
        active      INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
        created_at  INTEGER NOT NULL
      );
      CREATE INDEX cards_client ON cards (client_id);

      CREATE TABLE vendors (
        vendor_id   INTEGER PRIMARY KEY,
        name        TEXT    NOT NULL,
        country     TEXT    NOT NULL,
        currency    TEXT    NOT NULL CHECK (currency IN ('USD', 'EUR', 'GBP')),
        active      INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1))
      );

      CREATE TABLE shipping_rates (
        vendor_id         INTEGER NOT NULL REFERENCES vendors (vendor_id) ON DELETE CASCADE,
        mode              TEXT    NOT NULL CHECK (mode IN ('S', 'P')),
        zone              TEXT    NOT NULL CHECK (zone IN ('domestic', 'international')),
        first_cents       INTEGER NOT NULL CHECK (first_cents >= 0),
        additional_cents  INTEGER NOT NULL CHECK (additional_cents >= 0),
        min_days          INTEGER NOT NULL,
        max_days          INTEGER NOT NULL,
        PRIMARY KEY (vendor_id, mode, zone)
      ) WITHOUT ROWID;

      CREATE TABLE listings (
        listing_id   INTEGER PRIMARY KEY,
        vendor_id    INTEGER NOT NULL REFERENCES vendors (vendor_id),
        title        TEXT    NOT NULL,
        isbn         TEXT    NOT NULL,
        price_cents  INTEGER NOT NULL CHECK (price_cents > 0),
        stock        INTEGER NOT NULL CHECK (stock >= 0)
      );
      CREATE INDEX listings_vendor ON listings (vendor_id);

      -- One row per accepted real order; (client_id, request_id) is the duplicate key of CONTRACT 4.
      -- phase: queued (nothing taken) -> reserved (stock taken, amount fixed, payment pending) -> settled.
      CREATE TABLE orders (
        order_id               INTEGER PRIMARY KEY AUTOINCREMENT,
        client_id              INTEGER NOT NULL REFERENCES clients (client_id),
        request_id             TEXT    NOT NULL,
        request_hash           TEXT    NOT NULL,
        reference_id           TEXT,
        domain                 TEXT    NOT NULL,
        currency               TEXT    NOT NULL,
        shipping_mode          TEXT    NOT NULL CHECK (shipping_mode IN ('S', 'P')),
        ship_addr              TEXT    NOT NULL,
        bill_addr              TEXT    NOT NULL,
        card_id                INTEGER NOT NULL REFERENCES cards (card_id),
        total_max_price_cents  INTEGER,
        tax_cents              INTEGER,
        tax_model              TEXT,
        total_cents            INTEGER,
        phase                  TEXT    NOT NULL DEFAULT 'queued' CHECK (phase IN ('queued', 'reserved', 'settled')),
        attempts               INTEGER NOT NULL DEFAULT 0,
        created_at             INTEGER NOT NULL,
        UNIQUE (client_id, request_id)
      );
      CREATE INDEX orders_client_created ON orders (client_id, created_at, order_id);
      CREATE INDEX orders_client_reference ON orders (client_id, reference_id, created_at, order_id)
        WHERE reference_id IS NOT NULL;
      CREATE INDEX orders_unsettled ON orders (phase, created_at) WHERE phase <> 'settled';

      -- One row per copy. Line fields (line_no .. max_days) are the listing as ordered, copied once.
      CREATE TABLE order_items (
        order_item_id         INTEGER PRIMARY KEY AUTOINCREMENT,
        order_id              INTEGER NOT NULL REFERENCES orders (order_id),
        client_id             INTEGER NOT NULL,
        order_created_at      INTEGER NOT NULL,
        line_no               INTEGER NOT NULL,
        listing_id            INTEGER NOT NULL,
        vendor_id             INTEGER NOT NULL,
        title                 TEXT    NOT NULL,
        isbn                  TEXT    NOT NULL,
        line_quantity         INTEGER NOT NULL,
        max_price_cents       INTEGER,
        min_days              INTEGER,
        max_days              INTEGER,
        cost_cents            INTEGER NOT NULL DEFAULT 0,
        shipcost_cents        INTEGER NOT NULL DEFAULT 0,
        tax_cents             INTEGER NOT NULL DEFAULT 0,
        status                INTEGER NOT NULL DEFAULT 1,
        updated_at            INTEGER NOT NULL,
        status_changed_at     INTEGER NOT NULL,
        shipping_company      TEXT,
        tracking_id           TEXT,
        extra_shipping_cents  INTEGER
      );
      CREATE INDEX order_items_order ON order_items (order_id, order_item_id);
      CREATE INDEX order_items_status ON order_items (status, status_changed_at);
      CREATE INDEX order_items_client_updated ON order_items (client_id, updated_at, order_id);
      CREATE INDEX order_items_client_vendor ON order_items (client_id, vendor_id, order_created_at, order_id);

      -- The sandbox payment gateway's authorisations, keyed for idempotency.
      CREATE TABLE payments (
        payment_id        INTEGER PRIMARY KEY,
        idempotency_key   TEXT    NOT NULL UNIQUE,
        card_id           INTEGER NOT NULL REFERENCES cards (card_id),
        currency          TEXT    NOT NULL,
        amount_cents      INTEGER NOT NULL CHECK (amount_cents >= 0),
        status            TEXT    NOT NULL CHECK (status IN ('authorized', 'declined')),
        created_at        INTEGER NOT NULL,
        updated_at        INTEGER NOT NULL
      );

      -- Later changes to an authorisation (a void of one item's share, extra shipping), each applied once.
      CREATE TABLE payment_adjustments (
        adjustment_key  TEXT    PRIMARY KEY,
        payment_key     TEXT    NOT NULL REFERENCES payments (idempotency_key),
        delta_cents     INTEGER NOT NULL,
        created_at      INTEGER NOT NULL
      ) WITHOUT ROWID;

      -- Every money movement of an order; entry_key makes each write idempotent.
      CREATE TABLE ledger_entries (
        entry_id       INTEGER PRIMARY KEY,
        entry_key      TEXT    NOT NULL UNIQUE,
        order_id       INTEGER NOT NULL REFERENCES orders (order_id),
        order_item_id  INTEGER REFERENCES order_items (order_item_id),
        kind           TEXT    NOT NULL CHECK (kind IN ('authorize', 'decline', 'void', 'extra_shipping', 'refund')),
        amount_cents   INTEGER NOT NULL CHECK (amount_cents >= 0),
        currency       TEXT    NOT NULL,
        created_at     INTEGER NOT NULL
      );
      CREATE INDEX ledger_order ON ledger_entries (order_id);
    `,
  },
  SEARCH_MIGRATION,
  LIFECYCLE_MIGRATION,
  {
    version: 4,
    name: 'attempt leases',
    // An earlier worker takes no lease: reconciliation could fail an order it is still paying.
    besideOlder: false,
    // Until when the attempt that counted itself last may still be paying: nothing else fails the order before.
    sql: 'ALTER TABLE orders ADD COLUMN lease_until INTEGER;',
  },
  SECRETS_MIGRATION,
  WEBHOOKS_MIGRATION,
  PAYMENT_TARGET_MIGRATION,
  DELIVERY_CLAIMS_MIGRATION,
  { version: 9, ...UNSETTLED_PER_CLIENT_MIGRATION, besideOlder: true },
  EVENT_TYPE_MIGRATION,
  TRACE_CONTEXT_MIGRATION,
  { version: 12, ...RETENTION_MIGRATION, besideOlder: true },
  { version: 13, ...UNSETTLED_BY_AGE_MIGRATION, besideOlder: true },
  UNSETTLED_ITEMS_MIGRATION,
  ITEMS_UPDATED_MIGRATION,
  { version: 16, ...eventItemStatesMigration('INTEGER', ' WITHOUT ROWID') },
  // Additive: runs beside the release before it, which neither reads nor writes the new columns.
  { version: 17, name: SECRET_ROLL_MIGRATION_NAME, sql: secretRollSql('INTEGER'), besideOlder: true },
];
