import {
  DELIVERY_CLAIMS_MIGRATION_NAME,
  DELIVERY_CLAIMS_MIGRATION_SQL,
} from '../shared/delivery-claims.migration.js';
import type { Migration } from './postgres.migrations.js';

/** As the SQLite adapter's version 8: delivery attempts claimed in the store, with their webhook checked. */
export const DELIVERY_CLAIMS_MIGRATION: Migration = {
  version: 6,
  name: DELIVERY_CLAIMS_MIGRATION_NAME,
  // An earlier worker delivers without a claim: webhook:remove could answer while it still posts.
  besideOlder: false,
  sql: DELIVERY_CLAIMS_MIGRATION_SQL,
};
