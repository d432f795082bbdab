import {
  DELIVERY_CLAIMS_MIGRATION_NAME,
  DELIVERY_CLAIMS_MIGRATION_SQL,
} from '../shared/delivery-claims.migration.js';
import type { SqliteMigration } from './sqlite.migrations.js';

/** Delivery attempts claimed in the store, with their webhook checked: see WebhookStore.claim. */
export const DELIVERY_CLAIMS_MIGRATION: SqliteMigration = {
  version: 8,
  name: DELIVERY_CLAIMS_MIGRATION_NAME,
  // An earlier worker delivers without a claim: webhook:remove could answer while it still posts.
  besideOlder: false,
  sql: DELIVERY_CLAIMS_MIGRATION_SQL,
};
