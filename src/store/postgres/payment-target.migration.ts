import { PAYMENT_TARGET_MIGRATION_SQL } from '../shared/payment-target.migration.js';
import type { Migration } from './postgres.migrations.js';

/** As the SQLite adapter's version 7: payments brought to absolute, versioned targets instead of deltas. */
export const PAYMENT_TARGET_MIGRATION: Migration = {
  version: 5,
  name: 'payment targets: a payment version per order, the gateway brought to the ledger',
  // An earlier process applies deltas the targets would apply again.
  besideOlder: false,
  sql: PAYMENT_TARGET_MIGRATION_SQL,
};
