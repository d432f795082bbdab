import type { OrderKey, SearchCriteria, SearchPage, SearchStore } from '../port/store.port.js';
import {
  choosePath,
  itemTerms,
  keyRange,
  orderUpdateKey,
  updatedOrderTerms,
  scanCaps,
  searchBounds,
  shapeOf,
  type Driver,
  type ScanCaps,
  type SearchShape,
} from '../shared/search-plan.js';
import { ITEM_VIEW_COLUMNS } from '../shared/order.rows.js';
import { pageSql, type ItemDriver, type PageDialect } from '../shared/search-page.sql.js';
import { ITEMS_OF_ORDER } from './item-counts.sqlite.js';
import { readPage, statementCache, type Bindings } from './search-page.sqlite.js';
import { searchThread, type SearchThreadOptions } from './search-thread.js';
import { dbFile, type Db } from './sqlite.db.js';
import type { Statement } from 'better-sqlite3';

const SQLITE_ITEM_IDS = (column: string) => `${column} IN (SELECT value FROM json_each(@orderItemIds))`;

export interface SearchPlan {
  driver: Driver;
  /** Whether the page's cost is bounded by its limit (choosePath); the others are read on the search thread. */
  bounded: boolean;
  /** The counts the probe of an update range ran (RangeProbe), each with its bindings. */
  probes: { sql: string; params: Bindings }[];
  pageSql: string;
  itemsSql: string;
  /** Bindings of every statement; itemsSql also needs `pageIds`, a JSON array of the page's order ids. */
  params: Bindings;
  /** The page's rows when the dense probe read them already (pageSql, bound to its first items: see denseProbe). */
  rows?: unknown[][];
  /** SearchCriteria.maxItems, which readPage applies. */
  maxItems?: number;
}

/** Tests lower or raise the caps to force each path for an update range. */
export interface SqliteSearchOptions extends Partial<ScanCaps> {
  /**
   * Read the pages whose cost the plan cannot bound on a thread (search-thread.ts), off the event loop; inline
   * when absent, and on a `:memory:` database, which no other connection can open.
   */
  searchThread?: SearchThreadOptions;
}

/** Order history search (one query for the page, one for its items) and the order key a cursor names. */
export function sqliteSearch(
  db: Db,
  cursorKey: Buffer,
  options: SqliteSearchOptions = {},
): SearchStore & { plan(clientId: number, criteria: SearchCriteria): SearchPlan; close(): void } {
  const prepared = statementCache(db);
  const keyOf = db.prepare<[number, number], OrderKey>(
    'SELECT created_at AS createdAt, order_id AS orderId FROM orders WHERE order_id = ? AND client_id = ?',
  );

  const caps = scanCaps(options);

  function plan(clientId: number, c: SearchCriteria): SearchPlan {
    const params = bind(clientId, c);
    const probes: SearchPlan['probes'] = [];
    const count = (sql: string, cap: number) => {
      probes.push({ sql, params: { ...params, cap } });
      return prepared(sql).pluck().get(probes.at(-1)!.params) as number;
    };
    let dense: DensePage | undefined;
    const { driver, bounded } = choosePath(
      c,
      () => ({
        orders: (cap) => count(PROBE_ORDERS_SQL, cap),
        items: () => count(PROBE_ITEMS_SQL, caps.narrowUpdateScan),
        dense: () => {
          dense = denseProbe(prepared, c, params, caps.denseScan, probes);
          return dense.rows.length;
        },
        vendor: (cap) => count(PROBE_VENDOR_SQL, cap),
      }),
      caps,
    );
    const s = shapeOf(driver, c);
    // The dense probe's rows fill the page: they are the first of the whole window's (see denseProbe).
    const full = driver === 'dated-items' && dense !== undefined && dense.rows.length > c.limit;
    return {
      driver,
      bounded,
      probes,
      pageSql: full ? dense!.sql : pageSql(s, SQLITE_PAGE),
      itemsSql: itemsSql(s),
      params: full ? dense!.params : params,
      ...(full ? { rows: dense!.rows } : {}),
      ...(c.maxItems !== undefined ? { maxItems: c.maxItems } : {}),
    };
  }

  const file = dbFile(db);
  const thread = options.searchThread && file ? searchThread(file, options.searchThread) : undefined;
  // One read transaction: the probe, the page and its items come from the same snapshot; a page the plan cannot
  // bound is left to the thread, which reads it in a transaction of its own.
  const planAndRead = db.transaction((clientId: number, c: SearchCriteria): SearchPage | SearchPlan => {
    const p = plan(clientId, c);
    return thread && !p.bounded ? p : readPage(prepared, p, c.limit);
  });

  return {
    async search(clientId, criteria) {
      const read = planAndRead.deferred(clientId, criteria);
      return 'orders' in read ? read : thread!.run(clientId, read, criteria.limit);
    },
    /**
     * The statements a search runs and the path it takes, for EXPLAIN and benchmarks; the page is read only when
     * the dense probe read it (`rows`).
     */
    plan,
    async orderKey(clientId, orderId) {
      return keyOf.get(orderId, clientId) ?? null;
    },
    cursorKey,
    close: () => thread?.close(),
  };
}

const ITEM_COLUMNS = ITEM_VIEW_COLUMNS.map((c) => `i.${c}`).join(', ');

// The probe's counts (RangeProbe), each up to @cap entries of its index.
const PROBE_ORDERS_SQL = `SELECT count(*) FROM (
  SELECT 1 FROM orders u INDEXED BY orders_client_items_updated
   WHERE u.client_id = @clientId AND ${orderUpdateKey('u')} >= @scanFrom
     AND u.created_at >= @createdFrom AND u.created_at < @createdTo
   LIMIT @cap)`;
const PROBE_ITEMS_SQL = `SELECT count(*) FROM (
  SELECT 1 FROM order_items INDEXED BY order_items_search_updated
   WHERE client_id = @clientId AND updated_at >= @scanFrom AND updated_at < @scanTo
   LIMIT @cap)`;

/** The dated-items page bound to the window's first items, and the rows it read (up to the page's limit + 1). */
interface DensePage {
  sql: string;
  params: Bindings;
  rows: unknown[][];
}

/**
 * The dense probe (RangeProbe.dense) on SQLite: the key of the window's `cap`-th item in result order, then the
 * dated-items page in the window cut at that key's created time (a few items more: the rest of its order's, and
 * of orders created the same millisecond). Its rows are the first of the uncut page, a prefix of the same order:
 * when they fill it they are the page, not read a second time. A tenth of `cap` is tried first: a page that fills
 * within the window's first items (a large client's recent updates, descending) costs that tenth, one that does
 * not a tenth more. The one statement before (denseMatches, as PostgreSQL still asks) counted the matching
 * orders among the first `cap` items through a subquery that read them all, some 11 virtual machine steps an
 * item, where the key's OFFSET takes 3 and the page's own scan 2 to 4; the page then read them again.
 */
function denseProbe(
  prepared: (sql: string) => Statement,
  c: SearchCriteria,
  params: Bindings,
  cap: number,
  probes: SearchPlan['probes'],
): DensePage {
  const s = shapeOf('dated-items', c);
  let page: DensePage = { sql: pageSql(s, SQLITE_PAGE), params, rows: [] };
  for (const first of new Set([Math.ceil(cap / 10), cap])) {
    if (first <= 0) break;
    const keyParams = { ...params, cap: first };
    probes.push({ sql: denseKeySql(s), params: keyParams });
    const key = prepared(denseKeySql(s)).get(keyParams) as { at: number } | undefined;
    // The window cut at the key's created time, which bounds the index's range: the orders created then too. A
    // window of fewer items: the page over all of it, which no larger cap changes.
    const cut: Bindings = !key ? {} : s.desc ? { createdFrom: key.at } : { createdTo: key.at + 1 };
    const pageParams = { ...params, ...cut };
    probes.push({ sql: page.sql, params: pageParams });
    page = { ...page, params: pageParams, rows: prepared(page.sql).raw(true).all(pageParams) as unknown[][] };
    if (!key || page.rows.length > c.limit) break;
  }
  return page;
}

/** The key of the window's @cap-th item in result order, from the index dated-items reads. */
const denseKeySql = (s: SearchShape) => {
  const dir = s.desc ? 'DESC' : 'ASC';
  return `SELECT d.order_created_at AS at FROM order_items d INDEXED BY order_items_search_created
           WHERE d.client_id = @clientId AND ${keyRange('d.order_created_at', 'd.order_id', s)}
           ORDER BY d.order_created_at ${dir}, d.order_id ${dir} LIMIT 1 OFFSET @cap - 1`;
};
const PROBE_VENDOR_SQL = `SELECT count(*) FROM (
  SELECT 1 FROM order_items INDEXED BY order_items_client_vendor
   WHERE client_id = @clientId AND vendor_id = @vendorId
     AND order_created_at >= @createdFrom AND order_created_at < @createdTo
   LIMIT @cap)`;

function bind(clientId: number, c: SearchCriteria): Bindings {
  return {
    clientId,
    ...searchBounds(c),
    // Each id once: the order-ids path joins the list as given.
    orderIds: c.orderIds ? JSON.stringify([...new Set(c.orderIds)]) : null,
    orderItemIds: c.orderItemIds ? JSON.stringify([...new Set(c.orderItemIds)]) : null,
  };
}

// How SQLite reads a page (pageSql): each driver's index named, as SQLite gathers no statistics to choose by.
const SQLITE_PAGE: PageDialect = {
  itemsOfOrder: ITEMS_OF_ORDER,
  idIn: SQLITE_ITEM_IDS,
  orders: {
    orders: { source: 'orders o' },
    reference: { source: 'orders o INDEXED BY orders_client_reference' },
    'order-ids': { source: 'json_each(@orderIds) j CROSS JOIN orders o ON o.order_id = j.value' },
    'item-ids': {
      source: `(SELECT DISTINCT i.order_id FROM json_each(@orderItemIds) j
                  CROSS JOIN order_items i ON i.order_item_id = j.value
                 WHERE i.client_id = @clientId) c
               CROSS JOIN orders o ON o.order_id = c.order_id`,
    },
  },
  itemIndex: (driver) => ` INDEXED BY ${ITEM_INDEXES[driver]}`,
  updatedOrderKeys,
  // Keys first, from an index alone; the orders table is read for the page only.
  keysFirst: (columns, keys, dir) => `SELECT ${columns} FROM (${keys}) k
     CROSS JOIN orders o ON o.order_id = k.id
    ORDER BY k.at ${dir}, k.id ${dir}`,
};

const ITEM_INDEXES: Record<ItemDriver, string> = {
  'vendor-items': 'order_items_client_vendor',
  'dated-items': 'order_items_search_created',
  'updated-items': 'order_items_search_updated',
};

/** Orders with an item updated since the range's start, from their index alone; each one's items by a seek. */
function updatedOrderKeys(s: SearchShape): string {
  const dir = s.desc ? 'DESC' : 'ASC';
  const where = updatedOrderTerms('u.created_at', s, SQLITE_ITEM_IDS);
  return `SELECT u.created_at AS at, u.order_id AS id FROM orders u INDEXED BY orders_client_items_updated
           WHERE ${where.join(' AND ')} ORDER BY at ${dir}, id ${dir} LIMIT @limit`;
}

function itemsSql(s: SearchShape): string {
  const where = [
    'i.order_id IN (SELECT value FROM json_each(@pageIds))',
    ...itemTerms('i', s, SQLITE_ITEM_IDS),
  ];
  return `SELECT ${ITEM_COLUMNS} FROM order_items i WHERE ${where.join(' AND ')} ORDER BY i.order_id, i.order_item_id`;
}
