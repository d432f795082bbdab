import { PAYMENT_TARGET_MIGRATION_SQL } from '../shared/payment-target.migration.js';
import type { SqliteMigration } from './sqlite.migrations.js';

/** Payments brought to absolute, versioned targets instead of deltas: see PaymentTarget in store.port.ts. */
export const PAYMENT_TARGET_MIGRATION: SqliteMigration = {
  version: 7,
  name: 'payment targets: a payment version per order, the gateway brought to the ledger',
  // An earlier process applies deltas the targets would apply again.
  besideOlder: false,
  sql: PAYMENT_TARGET_MIGRATION_SQL,
};
