import type { SqliteMigration } from './sqlite.migrations.js';

/**
 * Item lifecycle: ledger entries double as the outbox of gateway adjustments. A void, extra_shipping or
 * refund entry is written with its item's move and applied at the gateway after the commit; `applied_at`
 * stays null until then, so reconciliation can apply what a crash between the two left behind.
 */
export const LIFECYCLE_MIGRATION: SqliteMigration = {
  version: 3,
  name: 'ledger entries as the outbox of payment adjustments',
  // An earlier process applied adjustments itself: the outbox would apply them again.
  besideOlder: false,
  sql: `
    -- Null on an adjustment entry: not yet applied at the gateway. Authorize and decline entries record the
    -- gateway's own answer and are never pending.
    ALTER TABLE ledger_entries ADD COLUMN applied_at INTEGER;

    CREATE INDEX ledger_pending_adjustments ON ledger_entries (entry_id)
      WHERE applied_at IS NULL AND kind IN ('void', 'extra_shipping', 'refund');
  `,
};
