/**
 * Items by the day of their update, each day in order-date order (issue 41): an update range that holds many
 * items was scanned in order-date order from the start of the window until the page was full, so that a range
 * whose items all belong to the client's last orders ("items updated since yesterday", ascending) read every
 * earlier order of the window. Read day by day instead, each day of the range gives its first `limit + 1` orders
 * (one seek, then those orders' items), and the page is the first `limit + 1` of them all: the cost follows the
 * days the range spans and the limit, not the client's history. Given a vendor as well, this path leads when the
 * range holds fewer items than the vendor has in the window (search-plan.ts, chooseDriver): a vendor none of whose
 * orders has an item in a range of a few thousand items no longer reads all its orders. The same SQL on both
 * stores; the day is the integer division of the update time, an expression both stores index (the statements
 * name it as written here).
 */
export const UPDATE_DAY_MS = 86_400_000;

/** The indexed expression: statements that read the index compare exactly this (with their table's alias). */
export const updateDay = (alias: string) => `(${alias}.updated_at / ${UPDATE_DAY_MS})`;

export const SEARCH_DAYS_MIGRATION = {
  name: 'items by the day of their update: a wide update range is read day by day',
  sql: `CREATE INDEX order_items_search_days
    ON order_items (client_id, (updated_at / ${UPDATE_DAY_MS}), order_created_at, order_id, updated_at);`,
};
