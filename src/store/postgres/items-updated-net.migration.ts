import { SETS_ITEMS_UPDATED } from './items.postgres.js';
import type { Migration } from './postgres.migrations.js';

/**
 * Since this version the adapter keeps each order's items_updated_at in the statements that move its items'
 * updated_at (a reservation's rejects, a settlement, an item move), in the UPDATE of the order the step makes
 * anyway. The row trigger of migration 17 called a function running an UPDATE of the order for every item whose
 * time grew, though the settlement had set the time already: some 55,000 instructions per item, so that a
 * settlement of 247 items cost 1.6 times what its statements cost alone (callgrind). It stays as a
 * net for processes of earlier versions, which rely on it while a deploy runs them beside this one (docs/
 * operating.md, Upgrade notes); its WHEN skips the statements of sessions that carry SETS_ITEMS_UPDATED, on the
 * row, without calling the function. What this version still pays is the WHEN, prepared once per statement
 * that sets updated_at and tested per row: 46,000 instructions for a settlement of one item, 0.7 million for one
 * of 247. A later version drops the trigger once no earlier process can run. The setting is only ever set for a
 * function call or a transaction, never for a session: behind a transaction pooler a server connection serves
 * processes of both versions in turn.
 */
export const ITEMS_UPDATED_NET_MIGRATION: Migration = {
  version: 19,
  name: "the items' update trigger only for sessions that do not keep the order's time themselves",
  // The trigger still runs for the statements of earlier processes, which rely on it.
  besideOlder: true,
  sql: `
    DROP TRIGGER order_items_updated ON order_items;
    CREATE TRIGGER order_items_updated AFTER UPDATE OF updated_at ON order_items
      FOR EACH ROW WHEN (NEW.updated_at > OLD.updated_at
                         AND current_setting('${SETS_ITEMS_UPDATED}', true) IS DISTINCT FROM 'on')
      EXECUTE FUNCTION bo_order_items_updated();
  `,
};
