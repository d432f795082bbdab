import { PLAN_EACH_CALL } from './postgres.pool.js';
import type { SearchCriteria } from '../port/store.port.js';
import {
  chooseDriver,
  denseMatches,
  fewOrderCap,
  itemTerms,
  orderUpdateKey,
  updatedOrderTerms,
  SCAN_CAPS,
  searchBounds,
  shapeOf,
  countedProbe,
  type Driver,
  type RangeCounts,
  type ScanCaps,
  type SearchShape,
} from '../shared/search-plan.js';
import { canBeId } from './postgres.rows.js';
import { ITEM_VIEW_COLUMNS } from '../shared/order.rows.js';
import { pageSql, type PageDialect } from '../shared/search-page.sql.js';
import { ITEMS_OF_ORDER } from './item-counts.postgres.js';

const PG_ITEM_IDS = (column: string) => `${column} = ANY(@orderItemIds::bigint[])`;

/** One statement with positional parameters, ready for `pool.query` or `EXPLAIN`. */
export interface SearchStatement {
  sql: string;
  params: unknown[];
}

export interface SearchPlan extends SearchStatement {
  driver: Driver;
}

/**
 * The statement that reads one page of the client's orders, each with its matching items as a JSON array of
 * tuples (see ITEM_VIEW_COLUMNS), in one snapshot. It reads `limit + 1` orders: the extra one says more follow.
 * `counted` is what the probe of `updateRangeProbe` found; it only matters for an update range.
 */
export function planSearch(
  clientId: number,
  criteria: SearchCriteria,
  { counted, caps = SCAN_CAPS }: { counted?: RangeCounts; caps?: ScanCaps } = {},
): SearchPlan {
  const wide: RangeCounts = { items: Infinity, dense: null, orders: null, vendor: null };
  const driver = chooseDriver(criteria, () => countedProbe(counted ?? wide), caps);
  return { driver, ...positional(searchSql(shapeOf(driver, criteria)), bind(clientId, criteria)) };
}

/**
 * The counts that decide the path of an update range (RangeProbe), in one statement that asks each only when
 * chooseDriver would (a condition on an InitPlan skips a scan), or null when the criteria lead by something else.
 * `created_at + 0` keeps the planner off orders_client_created, which it would scan for the whole window: only
 * orders_client_items_updated bounds the count by the orders updated.
 */
export function updateRangeProbe(
  clientId: number,
  c: SearchCriteria,
  caps: ScanCaps = SCAN_CAPS,
): SearchStatement | null {
  let asked = false;
  chooseDriver(c, () => ((asked = true), countedProbe({ items: 0, dense: 0, orders: 0, vendor: 0 })), caps);
  if (!asked) return null;
  // Each CTE asks only when chooseDriver would: few orders (f) unless the items are few, the dense probe (w) without
  // a vendor unless the orders are few, the orders up to their cap (o) unless one of those decided.
  const wide = '(SELECT n FROM i) >= @itemCap';
  const many = `${wide} AND (SELECT n FROM f) >= @fewCap`;
  const vendorGiven = c.vendorId !== undefined;
  const dense = `(SELECT count(1)::int FROM (${denseMatches(c, {
    source: 'order_items d',
    gate: [many],
    cap: '@denseCap',
    idIn: PG_ITEM_IDS,
  })}) m)`;
  const updatedOrders = (gate: string, cap: string) => `(SELECT count(1)::int AS n FROM (
        SELECT 1 FROM orders u
         WHERE ${gate} AND u.client_id = @clientId AND ${orderUpdateKey('u')} >= @scanFrom
           AND u.created_at + 0 >= @createdFrom AND u.created_at + 0 < @createdTo
         LIMIT ${cap}) s)`;
  // The orders as chooseDriver asks them: exact under the few cap, else counted up to the order cap.
  const orders = `CASE WHEN i.n < @itemCap THEN NULL WHEN f.n < @fewCap THEN f.n
                       WHEN coalesce(w.n, 0) < @limit THEN o.n END`;
  const vendor = `(SELECT count(1)::int AS n FROM (
      SELECT 1 FROM order_items
       WHERE client_id = @clientId AND vendor_id = @vendorId
         AND order_created_at >= @createdFrom AND order_created_at < @createdTo
       LIMIT (SELECT CASE WHEN i.n < @itemCap THEN i.n WHEN f.n < @fewCap THEN f.n
                          WHEN o.n < @orderCap THEN o.n ELSE 0 END
                FROM i, f, o)) s)`;
  return positional(
    `WITH i AS (SELECT count(1)::int AS n FROM (
        SELECT 1 FROM order_items
         WHERE client_id = @clientId AND updated_at >= @scanFrom AND updated_at < @scanTo
         LIMIT @itemCap) s),
     f AS (SELECT ${updatedOrders(wide, '@fewCap')} AS n),
     w AS (SELECT ${vendorGiven ? 'NULL::int' : dense} AS n),
     o AS (SELECT ${updatedOrders(`${many} AND coalesce((SELECT n FROM w), 0) < @limit`, '@orderCap')} AS n)
     SELECT i.n AS items, CASE WHEN i.n >= @itemCap AND f.n >= @fewCap THEN w.n END AS dense,
            ${orders} AS orders, ${vendorGiven ? vendor : 'NULL::int'} AS vendor
       FROM i, f, w, o`,
    {
      ...bind(clientId, c),
      fewCap: fewOrderCap(caps),
      orderCap: caps.narrowOrderScan,
      itemCap: caps.narrowUpdateScan,
      denseCap: caps.denseScan,
    },
  );
}

/** Rewrites `@name` to `$n`, binding only the names the statement uses (PostgreSQL types every parameter). */
function positional(sql: string, named: Record<string, unknown>): SearchStatement {
  const index = new Map<string, number>();
  const params: unknown[] = [];
  const text = sql.replace(/@(\w+)/g, (_match, name: string) => {
    let n = index.get(name);
    if (n === undefined) {
      if (!(name in named)) throw new Error(`search statement uses @${name}, which is not bound`);
      params.push(named[name]);
      index.set(name, (n = params.length));
    }
    return `$${n}`;
  });
  return { sql: text, params };
}

function bind(clientId: number, c: SearchCriteria): Record<string, unknown> {
  return {
    clientId,
    ...searchBounds(c),
    // An id no row can have matches nothing, as in SQLite, instead of failing the statement.
    orderIds: c.orderIds ? [...new Set(c.orderIds.filter(canBeId))] : null,
    orderItemIds: c.orderItemIds ? [...new Set(c.orderItemIds.filter(canBeId))] : null,
    maxItems: c.maxItems ?? Number.MAX_SAFE_INTEGER,
  };
}

// How PostgreSQL reads a page (pageSql): the order drivers' terms; no hints, it picks the indexes.
const PG_PAGE: PageDialect = {
  itemsOfOrder: ITEMS_OF_ORDER,
  idIn: PG_ITEM_IDS,
  orders: {
    orders: { source: 'orders o' },
    reference: { source: 'orders o' },
    'order-ids': { source: 'orders o', terms: ['o.order_id = ANY(@orderIds::bigint[])'] },
    'item-ids': {
      source: 'orders o',
      terms: [
        `o.order_id IN (SELECT i.order_id FROM order_items i
                     WHERE i.order_item_id = ANY(@orderItemIds::bigint[]) AND i.client_id = @clientId)`,
      ],
    },
  },
  itemIndex: () => '',
  updatedOrderKeys,
  // Keys first, from an index alone; the orders table is read for the page only (the outer statement orders it).
  keysFirst: (columns, keys) => `SELECT ${columns} FROM (${keys}) k JOIN orders o ON o.order_id = k.id`,
};

/**
 * Orders with an item updated since the range's start, by orders_client_items_updated (client_id, key, created_at,
 * order_id); each one's items by a seek. `created_at + 0` keeps the planner from reading orders_client_created in
 * result order and filtering the whole window, the cost this path is for avoiding: it sorts the few orders read.
 */
function updatedOrderKeys(s: SearchShape): string {
  const dir = s.desc ? 'DESC' : 'ASC';
  const where = updatedOrderTerms('u.created_at + 0', s, PG_ITEM_IDS);
  return `SELECT u.created_at AS at, u.order_id AS id FROM orders u
           WHERE ${where.join(' AND ')} ORDER BY u.created_at + 0 ${dir}, id ${dir} LIMIT @limit`;
}

function searchSql(s: SearchShape): string {
  const dir = s.desc ? 'DESC' : 'ASC';
  const items = [`i.order_id = p.order_id`, ...itemTerms('i', s, PG_ITEM_IDS)];
  const tuple = ITEM_VIEW_COLUMNS.map((c) => `i.${c}`).join(', ');
  // Each order's items by order_items_order (order_id, order_item_id), in the same statement: one snapshot. Given
  // order ids, a generic plan (prepared) reads the client's orders by date instead of the ids by key: 1 ms → 10 ms
  // at p50 for the largest client (BENCHMARKS.md, Search (PostgreSQL)), so that one is planned for its values.
  const planned = s.driver === 'order-ids' ? `${PLAN_EACH_CALL} ` : '';
  // Only the orders of the page have their items read (`kept`: pageLength's rule, from the orders' item counts);
  // the one after them, and any past @maxItems, tell that more follow.
  return `${planned}SELECT p.order_id, p.created_at, p.currency, p.tax_cents, p.tax_model, p.reference_id,
                 p.item_count,
                 CASE WHEN p.kept THEN (SELECT json_agg(json_build_array(${tuple}) ORDER BY i.order_item_id)
                    FROM order_items i WHERE ${items.join(' AND ')}) END AS items
            FROM (SELECT q.*, row_number() OVER w < @limit
                          AND (row_number() OVER w = 1 OR sum(q.item_count) OVER w <= @maxItems) AS kept
                    FROM (${pageSql(s, PG_PAGE)}) q
                  WINDOW w AS (ORDER BY q.created_at ${dir}, q.order_id ${dir})) p
           ORDER BY p.created_at ${dir}, p.order_id ${dir}`;
}
