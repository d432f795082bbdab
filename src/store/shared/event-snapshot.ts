/**
 * The order as an event keeps it: the fields of its OrderResponse, in camelCase, written by the adapters in the
 * event's transaction and read back for delivery. The event's row holds the order's own fields; its items are
 * rebuilt from order_items (the fields no change rewrites) and event_item_states (the fields a change may
 * rewrite, one row per item each time they differ from the item's row before), so an event stores what changed,
 * not the whole order. Rows written before (SQLite schema version 16, PostgreSQL 18) still hold every item. Only
 * the adapters import this.
 */
import type { ItemView, OrderView } from '../port/store.port.js';
import { fieldOf, type ItemColumn } from './item.columns.js';
import { ITEM_VIEW_COLUMNS } from './order.rows.js';

export interface EventSnapshot {
  order: OrderView;
  items: ItemView[];
}

/** The event row's `snapshot`: the order's fields, and its items only in a row written before item states. */
export interface StoredSnapshot {
  order: OrderView;
  items?: ItemView[];
}

/** The order's fields of an event, read inside the transaction of its change. */
export const orderSnapshotOf = (order: OrderView): StoredSnapshot => ({
  order: {
    orderId: order.orderId,
    createdAt: order.createdAt,
    currency: order.currency,
    taxCents: order.taxCents,
    taxModel: order.taxModel,
    referenceId: order.referenceId,
  },
});

/** A stored snapshot (JSON text, or an object as PostgreSQL's JSONB reads). */
export const parseSnapshot = (stored: string | StoredSnapshot): StoredSnapshot =>
  typeof stored === 'string' ? (JSON.parse(stored) as StoredSnapshot) : stored;

/**
 * The event's order and items, sorted by id: those of an older row, else `items` (EVENT_ITEMS_SQL's), which the
 * adapter reads only for a row without its own (`holdsItems` false).
 */
export function readSnapshot(snapshot: StoredSnapshot, items: readonly ItemView[] | null): EventSnapshot {
  const own = snapshot.items ?? items ?? [];
  return { order: snapshot.order, items: [...own].sort((a, b) => a.orderItemId - b.orderItemId) };
}

export const holdsItems = (snapshot: StoredSnapshot): boolean => snapshot.items !== undefined;

// The item fields a change may rewrite: status, shipping, and the price and days fixed at reservation, the last
// eight of an item's view. The others (ids, line, listing, vendor, title, isbn, quantity) are written once, when
// the order is accepted.
export const ITEM_STATE_COLUMNS = ITEM_VIEW_COLUMNS.slice(8);

/** Where an event reads a column of its items: its state (`s`, event_item_states) or the item's row (`i`). */
const viewSource = (column: ItemColumn) => (ITEM_STATE_COLUMNS.includes(column) ? 's' : 'i');

/**
 * Where an event's statement finds the order's items `i`, each with its latest state `s` (null for an item with
 * none): a WITH clause (or none) and a FROM clause.
 */
export interface ItemsWithLatest {
  with: string;
  from: string;
}

/**
 * PostgreSQL reads the order's items, and its states up to `upTo` (each item's latest kept by DISTINCT ON), each
 * in one range, where a seek per item cost ~4 buffers an item. Both are materialized so that no plan joins them by
 * seeking one per row of the other, as a planner without statistics did (~4,000 buffers for 250 items); without
 * statistics the range may still read a heap page per state, with them each page once. SQLite seeks per item:
 * its key holds the row, and one range, materialized, was slower in a trial.
 */
export const itemsWithLatest = {
  postgres: (orderId: string, upTo?: string): ItemsWithLatest => ({
    with: `WITH i AS MATERIALIZED (SELECT * FROM order_items WHERE order_id = ${orderId}),
      s AS MATERIALIZED (
        SELECT DISTINCT ON (m.order_item_id) m.* FROM event_item_states m
         WHERE m.order_id = ${orderId}${upTo ? ` AND m.sequence <= ${upTo}` : ''}
         ORDER BY m.order_item_id, m.sequence DESC)`,
    from: 'i LEFT JOIN s ON s.order_item_id = i.order_item_id',
  }),
  sqlite: {
    with: '',
    from: `order_items i
      LEFT JOIN event_item_states s ON s.order_id = i.order_id AND s.order_item_id = i.order_item_id
       AND s.sequence = (SELECT max(m.sequence) FROM event_item_states m
                          WHERE m.order_id = i.order_id AND m.order_item_id = i.order_item_id)`,
  },
};

/**
 * The item states an event adds: each item of the order whose changeable fields differ from its latest state
 * (`source`, itemsWithLatest's) or that has none yet, at the event's sequence. `same` is the store's null-safe
 * equality (`IS`, or `IS NOT DISTINCT FROM`: never null); `sequence` and `orderId` are SQL expressions. Written in
 * key order, so that PostgreSQL's heap holds an event's states so (an index range over them in a hash join's
 * order read ~170 pages for 250 states).
 */
export function recordItemStatesSql(
  same: string,
  sequence: string,
  orderId: string,
  source: ItemsWithLatest,
): string {
  const equal = ITEM_STATE_COLUMNS.map((c) => `s.${c} ${same} i.${c}`).join(' AND ');
  return `
    INSERT INTO event_item_states (order_id, order_item_id, sequence, ${ITEM_STATE_COLUMNS.join(', ')})
    ${source.with}
    SELECT i.order_id, i.order_item_id, ${sequence}, ${ITEM_STATE_COLUMNS.map((c) => `i.${c}`).join(', ')}
      FROM ${source.from}
     WHERE i.order_id = ${orderId} AND (s.order_item_id IS NULL OR NOT (${equal}))
     ORDER BY i.order_item_id`;
}

/**
 * SQLite's items of the event of order $1 at sequence $2, as ItemView (its columns in ITEM_VIEW_COLUMNS' order),
 * sorted by id: each at its latest state then, a seek per item as itemsWithLatest.sqlite's (PostgreSQL reads them
 * with eventItemsJsonSql).
 */
export const EVENT_ITEMS_SQL = `
  SELECT ${ITEM_VIEW_COLUMNS.map((c) => `${viewSource(c)}.${c} AS "${fieldOf(c)}"`).join(', ')}
    FROM order_items i
    JOIN event_item_states s ON s.order_id = i.order_id AND s.order_item_id = i.order_item_id
   WHERE i.order_id = $1
     AND s.sequence = (SELECT max(m.sequence) FROM event_item_states m
                        WHERE m.order_id = i.order_id AND m.order_item_id = i.order_item_id AND m.sequence <= $2)
   ORDER BY i.order_item_id`;

/**
 * PostgreSQL's items of an event, as one JSON array of ItemView sorted by id (NULL when no item has a state): the
 * event's order is `orderId`, its sequence `sequence` (SQL expressions of the enclosing query): the items' states
 * then, joined to their fixed fields. Read in the statement that reads the event, so no second round trip.
 */
export function eventItemsJsonSql(orderId: string, sequence: string): string {
  const source = itemsWithLatest.postgres(orderId, sequence);
  return `
  (${source.with}
   SELECT json_agg(json_build_object(${ITEM_VIEW_COLUMNS.map((c) => `'${fieldOf(c)}', ${viewSource(c)}.${c}`).join(', ')})
            ORDER BY i.order_item_id)
     FROM ${source.from} WHERE s.order_item_id IS NOT NULL)`;
}

/**
 * The migration adding item states (`bigint` is the store's 64-bit integer type). Keyed by order, item and
 * sequence, so that an item's latest state, or its state at an event, is one index seek. Rows written before
 * keep their whole snapshot and are read as they are (no rewrite of a large table in the migration's lock);
 * retention removes them in time.
 */
export const eventItemStatesMigration = (bigint: string, withoutRowid: string) => ({
  name: 'event item states: an event stores the items that changed, not the whole order',
  // A table earlier releases never read. Their workers cannot deliver an event that a newer process recorded
  // without its items (they fail the attempt, which is retried until a newer worker takes it), and the events
  // they record keep their whole snapshot, which newer processes read as it is.
  besideOlder: true,
  sql: `
  CREATE TABLE event_item_states (
    order_id          ${bigint}  NOT NULL,
    order_item_id     ${bigint}  NOT NULL,
    sequence          INTEGER NOT NULL,
    min_days          INTEGER,
    max_days          INTEGER,
    cost_cents        ${bigint}  NOT NULL,
    shipcost_cents    ${bigint}  NOT NULL,
    status            INTEGER NOT NULL,
    updated_at        ${bigint}  NOT NULL,
    shipping_company  TEXT,
    tracking_id       TEXT,
    PRIMARY KEY (order_id, order_item_id, sequence)
  )${withoutRowid};`,
});
