import crypto from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';
import type { ItemViewRow, OrderViewRow } from './order.rows.js';

export type { ItemViewRow, OrderViewRow };

export type SortOrder = 'ascending' | 'descending';

/** Where an order sits in a result: by createDate, then orderId. */
export interface OrderKey {
  createdAt: number;
  orderId: number;
}

/** A search with every default resolved (epoch ms, ranges inclusive start, exclusive end); applied literally. */
export interface SearchCriteria {
  dateStart: number;
  dateEnd: number;
  itemUpdateStart?: number;
  itemUpdateEnd?: number;
  vendorId?: number;
  referenceId?: string;
  orderIds?: readonly number[];
  orderItemIds?: readonly number[];
  sortOrder: SortOrder;
  limit: number;
  /** Continue strictly after this key (keyset paging). */
  after?: OrderKey;
}

export interface SearchPage {
  /** Each order with only the items matching the item criteria, sorted by orderItemId. */
  orders: { order: OrderViewRow; items: ItemViewRow[] }[];
  more: boolean;
}

export interface SearchCursor {
  cursorId: number;
  clientId: number;
  criteriaHash: string;
  dateStart: number;
  dateEnd: number;
  after: OrderKey;
  createdAt: number;
}

/** The access path that leads a search; see chooseDriver. */
export type Driver =
  'order-ids' | 'item-ids' | 'reference' | 'updated-items' | 'vendor-items' | 'dated-items' | 'orders';

export interface SearchPlan {
  driver: Driver;
  probeSql?: string;
  pageSql: string;
  itemsSql: string;
  /** Bindings of every statement; itemsSql also needs `pageIds`, a JSON array of the page's order ids. */
  params: Bindings;
}

type Bindings = Record<string, number | string | null>;

/** Up to this many items updated in the range, reading them all and sorting beats scanning by order date. */
export const NARROW_UPDATE_SCAN = 2000;

/**
 * Which access path leads: a given set of ids or a reference first (few rows), then an update range when it
 * holds few items, then the indexes already in result order, which stop as soon as the page is full.
 */
export function chooseDriver(c: SearchCriteria, updateRangeIsNarrow: () => boolean): Driver {
  const updateRange = c.itemUpdateStart !== undefined || c.itemUpdateEnd !== undefined;
  if (c.orderIds) return 'order-ids';
  if (c.orderItemIds) return 'item-ids';
  if (c.referenceId !== undefined) return 'reference';
  if (updateRange && updateRangeIsNarrow()) return 'updated-items';
  if (c.vendorId !== undefined) return 'vendor-items';
  if (updateRange) return 'dated-items';
  return 'orders';
}

export type OrderSearchRepository = ReturnType<typeof createOrderSearchRepository>;

export interface OrderSearchOptions {
  /** Tests lower or raise it to force either path for an update range. */
  narrowUpdateScan?: number;
}

/** Order history search (one query for the page, one for its items) and the paging cursors it issues. */
export function createOrderSearchRepository(
  db: Db,
  { narrowUpdateScan = NARROW_UPDATE_SCAN }: OrderSearchOptions = {},
) {
  const statements = new Map<string, Statement>();
  const prepared = (sql: string): Statement => {
    let statement = statements.get(sql);
    if (!statement) statements.set(sql, (statement = db.prepare(sql)));
    return statement;
  };
  const saveCursor = db.prepare(
    `INSERT INTO search_cursors (cursor_id, client_id, criteria_hash, date_start, date_end, after_created_at,
       after_order_id, created_at)
     VALUES (@cursorId, @clientId, @criteriaHash, @dateStart, @dateEnd, @afterAt, @afterId, @createdAt)
     ON CONFLICT (cursor_id) DO NOTHING`,
  );
  const dropExpired = db.prepare('DELETE FROM search_cursors WHERE created_at < ?');
  const cursorById = db.prepare<[number, number, number], CursorRow>(
    'SELECT * FROM search_cursors WHERE cursor_id = ? AND client_id = ? AND created_at >= ?',
  );

  function plan(clientId: number, c: SearchCriteria): SearchPlan {
    const params = { ...bind(clientId, c), scanCap: narrowUpdateScan };
    let probed = false;
    const driver = chooseDriver(c, () => {
      probed = true;
      return (prepared(PROBE_SQL).pluck().get(params) as number) < narrowUpdateScan;
    });
    const s = shapeOf(driver, c);
    return {
      driver,
      ...(probed ? { probeSql: PROBE_SQL } : {}),
      pageSql: pageSql(s),
      itemsSql: itemsSql(s),
      params,
    };
  }

  // One read transaction: the page and its items come from the same snapshot. Raw rows mapped by hand
  // cost half of what better-sqlite3's row objects do.
  const search = db.transaction((clientId: number, c: SearchCriteria): SearchPage => {
    const p = plan(clientId, c);
    const rows = (prepared(p.pageSql).raw(true).all(p.params) as OrderTuple[]).map(toOrderView);
    const page = rows.slice(0, c.limit);
    if (page.length === 0) return { orders: [], more: false };
    const pageIds = JSON.stringify(page.map((o) => o.order_id));
    const items = prepared(p.itemsSql)
      .raw(true)
      .all({ ...p.params, pageIds }) as ItemTuple[];
    const byOrder = new Map<number, ItemViewRow[]>();
    for (const tuple of items) {
      const item = toItemView(tuple);
      const list = byOrder.get(item.order_id);
      if (list) list.push(item);
      else byOrder.set(item.order_id, [item]);
    }
    return {
      orders: page.map((order) => ({ order, items: byOrder.get(order.order_id) ?? [] })),
      more: rows.length > c.limit,
    };
  });

  const issue = db.transaction((cursor: Omit<SearchCursor, 'cursorId'>, expiredBefore: number): number => {
    dropExpired.run(expiredBefore);
    for (;;) {
      const cursorId = crypto.randomInt(1, 2 ** 48 - 1);
      const { after, ...rest } = cursor;
      const saved = saveCursor.run({ ...rest, cursorId, afterAt: after.createdAt, afterId: after.orderId });
      if (saved.changes === 1) return cursorId;
    }
  });

  return {
    /** One page of the client's orders matching the criteria, plus whether more follow. */
    search(clientId: number, criteria: SearchCriteria): Promise<SearchPage> {
      return Promise.resolve(search.deferred(clientId, criteria));
    },
    /** The statements a search runs and the path it takes, without running the page: for EXPLAIN and benchmarks. */
    plan(clientId: number, criteria: SearchCriteria): SearchPlan {
      return plan(clientId, criteria);
    },
    /** Stores a cursor and returns its id; cursors issued before `expiredBefore` are dropped on the way. */
    issueCursor(cursor: Omit<SearchCursor, 'cursorId'>, expiredBefore: number): Promise<number> {
      return Promise.resolve(issue.immediate(cursor, expiredBefore));
    },
    /** The cursor, only when this client was given it at or after `issuedSince`. */
    findCursor(cursorId: number, clientId: number, issuedSince: number): Promise<SearchCursor | null> {
      const row = cursorById.get(cursorId, clientId, issuedSince);
      return Promise.resolve(row ? toCursor(row) : null);
    },
  };
}

interface CursorRow {
  cursor_id: number;
  client_id: number;
  criteria_hash: string;
  date_start: number;
  date_end: number;
  after_created_at: number;
  after_order_id: number;
  created_at: number;
}

const toCursor = (r: CursorRow): SearchCursor => ({
  cursorId: r.cursor_id,
  clientId: r.client_id,
  criteriaHash: r.criteria_hash,
  dateStart: r.date_start,
  dateEnd: r.date_end,
  after: { createdAt: r.after_created_at, orderId: r.after_order_id },
  createdAt: r.created_at,
});

const ORDER_COLUMNS = 'o.order_id, o.created_at, o.currency, o.tax_cents, o.tax_model, o.reference_id';
type OrderTuple = [number, number, string, number | null, string | null, string | null];
const toOrderView = ([order_id, created_at, currency, tax_cents, tax_model, reference_id]: OrderTuple) => ({
  order_id,
  created_at,
  currency,
  tax_cents,
  tax_model,
  reference_id,
});

const ITEM_COLUMNS = `i.order_item_id, i.order_id, i.line_no, i.listing_id, i.vendor_id, i.title, i.isbn,
  i.line_quantity, i.min_days, i.max_days, i.cost_cents, i.shipcost_cents, i.status, i.updated_at,
  i.shipping_company, i.tracking_id`;
type ItemTuple = [
  ...[number, number, number, number, number, string, string, number],
  ...[number | null, number | null, number, number, number, number, string | null, string | null],
];
const toItemView = (r: ItemTuple): ItemViewRow => ({
  order_item_id: r[0],
  order_id: r[1],
  line_no: r[2],
  listing_id: r[3],
  vendor_id: r[4],
  title: r[5],
  isbn: r[6],
  line_quantity: r[7],
  min_days: r[8],
  max_days: r[9],
  cost_cents: r[10],
  shipcost_cents: r[11],
  status: r[12],
  updated_at: r[13],
  shipping_company: r[14],
  tracking_id: r[15],
});

const PROBE_SQL = `SELECT count(*) FROM (
  SELECT 1 FROM order_items INDEXED BY order_items_search_updated
   WHERE client_id = @clientId AND updated_at >= @scanFrom AND updated_at < @scanTo
   LIMIT @scanCap)`;

interface Shape {
  driver: Driver;
  desc: boolean;
  after: boolean;
  reference: boolean;
  vendor: boolean;
  itemFrom: boolean;
  itemTo: boolean;
  itemIds: boolean;
}

const shapeOf = (driver: Driver, c: SearchCriteria): Shape => ({
  driver,
  desc: c.sortOrder === 'descending',
  after: c.after !== undefined,
  reference: c.referenceId !== undefined,
  vendor: c.vendorId !== undefined,
  itemFrom: c.itemUpdateStart !== undefined,
  itemTo: c.itemUpdateEnd !== undefined,
  itemIds: c.orderItemIds !== undefined,
});

/**
 * An item is updated after its order is created, give or take the clocks of the processes that wrote them:
 * the bounds derived from that (scanFrom, createdTo) keep this margin, the exact criteria are checked apart.
 */
const CLOCK_MARGIN_MS = 3_600_000;

function bind(clientId: number, c: SearchCriteria): Bindings {
  // An item updated before itemUpdateEnd belongs to an order created before it too.
  const createdTo = Math.min(c.dateEnd, (c.itemUpdateEnd ?? c.dateEnd) + CLOCK_MARGIN_MS);
  const lowest = (c.after && c.sortOrder === 'ascending' ? c.after.createdAt : c.dateStart) - CLOCK_MARGIN_MS;
  return {
    clientId,
    createdFrom: c.dateStart,
    createdTo,
    afterAt: c.after?.createdAt ?? null,
    afterId: c.after?.orderId ?? null,
    referenceId: c.referenceId ?? null,
    vendorId: c.vendorId ?? null,
    // Each id once: the order-ids path joins the list as given.
    orderIds: c.orderIds ? JSON.stringify([...new Set(c.orderIds)]) : null,
    orderItemIds: c.orderItemIds ? JSON.stringify([...new Set(c.orderItemIds)]) : null,
    itemFrom: c.itemUpdateStart ?? null,
    itemTo: c.itemUpdateEnd ?? null,
    // An item is updated no earlier than its order was created, so the scan of update times starts there.
    scanFrom: Math.max(c.itemUpdateStart ?? lowest, lowest),
    scanTo: c.itemUpdateEnd ?? Number.MAX_SAFE_INTEGER,
    limit: c.limit + 1,
  };
}

/** The created-date bounds, with the cursor replacing the one it passes: SQLite seeks on a single lower bound. */
function keyRange(at: string, id: string, s: Shape): string {
  if (!s.after) return `${at} >= @createdFrom AND ${at} < @createdTo`;
  return s.desc
    ? `${at} >= @createdFrom AND (${at}, ${id}) < (@afterAt, @afterId)`
    : `(${at}, ${id}) > (@afterAt, @afterId) AND ${at} < @createdTo`;
}

function itemTerms(alias: string, s: Shape): string[] {
  return [
    ...(s.itemFrom ? [`${alias}.updated_at >= @itemFrom`] : []),
    ...(s.itemTo ? [`${alias}.updated_at < @itemTo`] : []),
    ...(s.itemIds ? [`${alias}.order_item_id IN (SELECT value FROM json_each(@orderItemIds))`] : []),
  ];
}

/** Conditions on the order id `oid` that the driver does not already guarantee. */
function existsTerms(oid: string, s: Shape): string[] {
  const items = itemTerms('i', s);
  const itemsGuaranteed = s.driver === 'updated-items' || s.driver === 'dated-items';
  return [
    ...(s.vendor && s.driver !== 'vendor-items'
      ? [`EXISTS (SELECT 1 FROM order_items v WHERE v.order_id = ${oid} AND v.vendor_id = @vendorId)`]
      : []),
    ...(items.length > 0 && !itemsGuaranteed
      ? [`EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = ${oid} AND ${items.join(' AND ')})`]
      : []),
  ];
}

const ORDER_SOURCES: Partial<Record<Driver, string>> = {
  orders: 'orders o',
  reference: 'orders o INDEXED BY orders_client_reference',
  'order-ids': 'json_each(@orderIds) j CROSS JOIN orders o ON o.order_id = j.value',
  'item-ids': `(SELECT DISTINCT i.order_id FROM json_each(@orderItemIds) j
                  CROSS JOIN order_items i ON i.order_item_id = j.value
                 WHERE i.client_id = @clientId) c
               CROSS JOIN orders o ON o.order_id = c.order_id`,
};

const ITEM_DRIVERS: Partial<Record<Driver, { index: string; terms: (s: Shape) => string[] }>> = {
  'vendor-items': { index: 'order_items_client_vendor', terms: () => ['d.vendor_id = @vendorId'] },
  'dated-items': { index: 'order_items_search_created', terms: (s) => itemTerms('d', s) },
  'updated-items': {
    index: 'order_items_search_updated',
    terms: () => ['d.updated_at >= @scanFrom', 'd.updated_at < @scanTo'],
  },
};

function pageSql(s: Shape): string {
  const dir = s.desc ? 'DESC' : 'ASC';
  const source = ORDER_SOURCES[s.driver];
  if (source) {
    const where = [
      'o.client_id = @clientId',
      keyRange('o.created_at', 'o.order_id', s),
      ...(s.reference ? ['o.reference_id = @referenceId'] : []),
      ...existsTerms('o.order_id', s),
    ];
    return `SELECT ${ORDER_COLUMNS} FROM ${source} WHERE ${where.join(' AND ')}
            ORDER BY o.created_at ${dir}, o.order_id ${dir} LIMIT @limit`;
  }
  const { index, terms } = ITEM_DRIVERS[s.driver]!;
  const where = [
    'd.client_id = @clientId',
    ...terms(s),
    keyRange('d.order_created_at', 'd.order_id', s),
    ...existsTerms('d.order_id', s),
  ];
  // Keys first, from the index alone; the orders table is read for the page only.
  return `SELECT ${ORDER_COLUMNS} FROM (
            SELECT d.order_created_at AS at, d.order_id AS id FROM order_items d INDEXED BY ${index}
             WHERE ${where.join(' AND ')}
             GROUP BY d.order_created_at, d.order_id ORDER BY at ${dir}, id ${dir} LIMIT @limit) k
          CROSS JOIN orders o ON o.order_id = k.id
          ORDER BY k.at ${dir}, k.id ${dir}`;
}

function itemsSql(s: Shape): string {
  const where = ['i.order_id IN (SELECT value FROM json_each(@pageIds))', ...itemTerms('i', s)];
  return `SELECT ${ITEM_COLUMNS} FROM order_items i WHERE ${where.join(' AND ')} ORDER BY i.order_id, i.order_item_id`;
}
