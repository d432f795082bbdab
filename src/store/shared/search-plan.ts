/**
 * What both adapters decide the same way before writing any SQL: which access path leads a search, the shape
 * of its statement, and the bounds derived from the criteria. Pure: no driver, no SQL.
 */
import type { SearchCriteria } from '../port/store.port.js';

/** The access path that leads a search; see chooseDriver. */
export type Driver =
  | 'order-ids'
  | 'item-ids'
  | 'reference'
  | 'updated-orders'
  | 'updated-items'
  | 'vendor-items'
  | 'dated-items'
  | 'orders';

/** Up to this many items updated in the range, reading them all and sorting beats scanning by order date. */
export const NARROW_UPDATE_SCAN = 2000;

/** Up to this many orders with an item updated since the range's start, reading them all and sorting wins too. */
export const NARROW_ORDER_SCAN = 2000;

/**
 * Fewer orders than this updated since the range's start, and the order path reads less than the dense probe
 * alone may (DENSE_SCAN entries, some 400 pages): 64 orders at about 4 pages each (a row and a seek) are some 250.
 * Counted before the dense probe, at the cost of this many index entries at most. Issue 41's late range (9 orders
 * of 250 items updated after the client's 200 others, limit 1), at 1,000,000 generated orders: ascending, SQLite
 * 352,056 virtual machine steps (probe and page) down to 22,014, PostgreSQL 461 buffers to 380; descending, where
 * the window's first items held the page at once, 35,232 to 22,035 steps but 236 to 269 buffers.
 */
export const FEW_ORDER_SCAN = 64;

/**
 * When the first this many items of the window, in result order, hold a page of matching orders, the scan in result
 * order reads no more than them: an index entry each, some 75 to a page, where the order path reads a row and a
 * seek (about 4 pages) per order updated, so 30,000 entries cost what some 100 orders do.
 */
export const DENSE_SCAN = 30_000;

/** The thresholds of the probe of an update range; tests move them to force each path. */
export interface ScanCaps {
  fewOrderScan: number;
  narrowOrderScan: number;
  narrowUpdateScan: number;
  denseScan: number;
}

export const SCAN_CAPS: ScanCaps = {
  fewOrderScan: FEW_ORDER_SCAN,
  narrowOrderScan: NARROW_ORDER_SCAN,
  narrowUpdateScan: NARROW_UPDATE_SCAN,
  denseScan: DENSE_SCAN,
};

/** The caps a store's options give, each defaulting to its constant. */
export const scanCaps = (options: Partial<ScanCaps>): ScanCaps => ({
  fewOrderScan: options.fewOrderScan ?? FEW_ORDER_SCAN,
  narrowOrderScan: options.narrowOrderScan ?? NARROW_ORDER_SCAN,
  narrowUpdateScan: options.narrowUpdateScan ?? NARROW_UPDATE_SCAN,
  denseScan: options.denseScan ?? DENSE_SCAN,
});

/** The cap of the first count of orders (FEW_ORDER_SCAN), never above the order path's own. */
export const fewOrderCap = (caps: ScanCaps): number => Math.min(caps.fewOrderScan, caps.narrowOrderScan);

/**
 * The counts that decide the path of an update range, each stopping at its cap so that it costs at most that many
 * index entries, and asked only when needed: the client's items updated in the range, the matching orders among
 * the window's first denseScan items in result order (up to the page's limit + 1; SQLite's, up to the created time
 * of the denseScan-th, and its page read with them: search.sqlite.ts denseProbe), its orders in the window with
 * an item updated since the range's start (orderUpdateKey, up to `cap`), the vendor's items in the window (up to
 * `cap`).
 */
export interface RangeProbe {
  items(): number;
  dense(): number;
  orders(cap: number): number;
  vendor(cap: number): number;
}

/**
 * What a probe counted, as PostgreSQL's one statement returns it (the same rules as chooseDriver's asks): `orders`
 * up to the last cap chooseDriver asks it for (exact when under the first).
 */
export interface RangeCounts {
  items: number;
  dense: number | null;
  orders: number | null;
  vendor: number | null;
}

/** A probe over counts already taken: each was counted up to the cap chooseDriver then asks for. */
export const countedProbe = (counted: RangeCounts): RangeProbe => ({
  items: () => counted.items,
  dense: () => counted.dense ?? 0,
  orders: (cap) => Math.min(counted.orders ?? Infinity, cap),
  vendor: (cap) => Math.min(counted.vendor ?? Infinity, cap),
});

/**
 * An order's key for update ranges (orders_client_items_updated): when one of its items was last updated, or its
 * creation while none was (items-updated.migration.ts). No item of the order has a later updated_at, so an
 * order with an item updated in [start, end) has a key >= start: the necessary condition the order path reads,
 * the exact one checked per order by a seek (existsTerms).
 */
export const orderUpdateKey = (alias: string) => `coalesce(${alias}.items_updated_at, ${alias}.created_at)`;

/**
 * Which access path leads: a given set of ids or a reference first (few rows), then an update range when few
 * items were updated in it (read those items), else, without a vendor, when very few orders were updated since
 * its start (fewer than fewOrderScan: read those orders), else by the window in result order when its first
 * denseScan items hold the page, else when few orders were updated since its start (read those orders), unless a
 * vendor has fewer items in the window; then the indexes already in result order, which stop as soon as the page
 * is full.
 *
 * The items are asked first: an item costs one entry of an index that holds its keys, an order one row and a seek
 * of its items, so with a few items per order the item path reads several times fewer pages (on PostgreSQL at
 * 200,000 generated orders, clients drawn by volume: 53–150 buffers per search against 132–932 when orders led).
 * The order path is for the ranges whose orders hold many items each (9 orders of 250 items, say) and whose
 * matches are sparse in the window: where they are not (a large client's last 7 or 30 days), the scan in result
 * order fills the page within its first DENSE_SCAN entries (PostgreSQL, 1,000,000 generated orders, clients drawn
 * by volume, probe and page: 244 and 248 buffers per search where asking the orders first read 1,557 and 2,121).
 * The dense probe reads up to DENSE_SCAN entries to learn that, so the orders are counted up to FEW_ORDER_SCAN
 * before it: a range whose matches are those few orders (a late range) reads them, not the window.
 *
 * Bounded by what the query can return: the probe reads at most NARROW_UPDATE_SCAN + FEW_ORDER_SCAN + DENSE_SCAN
 * + NARROW_ORDER_SCAN + 2,000 index entries; the item path reads fewer than NARROW_UPDATE_SCAN items; the scan in
 * result order, chosen by its first entries, about DENSE_SCAN items (and the rest of its last order's); the order
 * path fewer than NARROW_ORDER_SCAN orders, two seeks each, and sorts them; the vendor's path, chosen when the
 * vendor has fewer items than the side it is compared with, at most those. What is left unbounded: 2,000 items
 * or more in the range and 2,000 orders or more updated since its start (a wide range, or one long past), with a
 * vendor of as many items in the window or none, and sparse matches: the scan in result order then reads the
 * window (or the vendor's part of it) up to the page; when nothing matches, every item of the vendor's orders in
 * the window, or every order of the window (at 1,000,000 generated orders, the largest client's 90 days: about
 * 20,000 orders of 64,000 items).
 */
export function chooseDriver(c: SearchCriteria, probe: () => RangeProbe, caps: ScanCaps = SCAN_CAPS): Driver {
  return choosePath(c, probe, caps).driver;
}

/**
 * The path chooseDriver takes, and whether its cost is bounded by the page rather than by the client's history.
 * Unbounded: an update range whose probe found no narrow side (the last two returns), read in result order until
 * the page is full: with sparse matches, up to the whole window (or the vendor's part of it). A store that must
 * keep a shared resource free (SQLite's event loop) runs these apart.
 */
export interface SearchPath {
  driver: Driver;
  bounded: boolean;
}

export function choosePath(
  c: SearchCriteria,
  probe: () => RangeProbe,
  caps: ScanCaps = SCAN_CAPS,
): SearchPath {
  const bounded = (driver: Driver): SearchPath => ({ driver, bounded: true });
  const updateRange = c.itemUpdateStart !== undefined || c.itemUpdateEnd !== undefined;
  if (c.orderIds) return bounded('order-ids');
  if (c.orderItemIds) return bounded('item-ids');
  if (c.referenceId !== undefined) return bounded('reference');
  if (updateRange) {
    const counts = probe();
    // The vendor's items, counted up to n: fewer means its path reads less than the range's.
    const vendorFewer = (n: number) => c.vendorId !== undefined && counts.vendor(n) < n;
    const items = counts.items();
    if (items < caps.narrowUpdateScan) return bounded(vendorFewer(items) ? 'vendor-items' : 'updated-items');
    if (c.vendorId === undefined) {
      const few = fewOrderCap(caps);
      if (counts.orders(few) < few) return bounded('updated-orders');
      if (counts.dense() >= c.limit + 1) return bounded('dated-items');
    }
    const orders = counts.orders(caps.narrowOrderScan);
    if (orders < caps.narrowOrderScan)
      return bounded(vendorFewer(orders) ? 'vendor-items' : 'updated-orders');
    return { driver: c.vendorId !== undefined ? 'vendor-items' : 'dated-items', bounded: false };
  }
  // Without an update range every order of the path matches but for its vendor, which the vendor's path reads:
  // each ends with the page.
  return bounded(c.vendorId !== undefined ? 'vendor-items' : 'orders');
}

/**
 * How many of a result's first orders, whose items number `itemCounts` in result order, make its page: at most
 * `limit`, and none that would take the page past `maxItems` items (SearchCriteria.maxItems), but always the first.
 */
export function pageLength(itemCounts: readonly number[], limit: number, maxItems = Infinity): number {
  let items = 0;
  for (let n = 0; n < Math.min(limit, itemCounts.length); n++) {
    items += itemCounts[n]!;
    if (n > 0 && items > maxItems) return n;
  }
  return Math.min(limit, itemCounts.length);
}

/** Which terms a search's statement has: the adapters build their SQL from this. */
export interface SearchShape {
  driver: Driver;
  desc: boolean;
  after: boolean;
  reference: boolean;
  vendor: boolean;
  itemFrom: boolean;
  itemTo: boolean;
  itemIds: boolean;
}

export const shapeOf = (driver: Driver, c: SearchCriteria): SearchShape => ({
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

/** The bounds every statement binds: created-date range, cursor, and the update-time range to scan. */
export function searchBounds(c: SearchCriteria) {
  // An item updated before itemUpdateEnd belongs to an order created before it too.
  const createdTo = Math.min(c.dateEnd, (c.itemUpdateEnd ?? c.dateEnd) + CLOCK_MARGIN_MS);
  const lowest = (c.after && c.sortOrder === 'ascending' ? c.after.createdAt : c.dateStart) - CLOCK_MARGIN_MS;
  return {
    createdFrom: c.dateStart,
    createdTo,
    afterAt: c.after?.createdAt ?? null,
    afterId: c.after?.orderId ?? null,
    referenceId: c.referenceId ?? null,
    vendorId: c.vendorId ?? null,
    itemFrom: c.itemUpdateStart ?? null,
    itemTo: c.itemUpdateEnd ?? null,
    // An item is updated no earlier than its order was created, so the scan of update times starts there.
    scanFrom: Math.max(c.itemUpdateStart ?? lowest, lowest),
    scanTo: c.itemUpdateEnd ?? Number.MAX_SAFE_INTEGER,
    limit: c.limit + 1,
  };
}

/**
 * The created-date bounds, with the cursor replacing the one it passes: both stores seek their index from the
 * cursor on a single lower bound.
 */
export function keyRange(at: string, id: string, s: SearchShape): string {
  if (!s.after) return `${at} >= @createdFrom AND ${at} < @createdTo`;
  return s.desc
    ? `${at} >= @createdFrom AND (${at}, ${id}) < (@afterAt, @afterId)`
    : `(${at}, ${id}) > (@afterAt, @afterId) AND ${at} < @createdTo`;
}

/** The item conditions of a search; `idIn` is the store's way to test a column against @orderItemIds. */
export function itemTerms(alias: string, s: SearchShape, idIn: (column: string) => string): string[] {
  return [
    ...(s.itemFrom ? [`${alias}.updated_at >= @itemFrom`] : []),
    ...(s.itemTo ? [`${alias}.updated_at < @itemTo`] : []),
    ...(s.itemIds ? [idIn(`${alias}.order_item_id`)] : []),
  ];
}

/**
 * The dense probe (RangeProbe.dense): the matching orders among the window's first `cap` items in result order,
 * read as the dated-items page reads them (order_items_search_created, alias `d`), one row each up to the page's
 * limit + 1. `source` names the table as the store hints its index; `gate` adds the store's conditions on asking.
 */
export function denseMatches(
  c: SearchCriteria,
  {
    source,
    gate = [],
    cap,
    idIn,
  }: { source: string; gate?: string[]; cap: string; idIn: (column: string) => string },
): string {
  const s = shapeOf('dated-items', c);
  const dir = s.desc ? 'DESC' : 'ASC';
  return `SELECT 1 FROM (
      SELECT d.order_created_at, d.order_id, d.updated_at FROM ${source}
       WHERE ${[...gate, 'd.client_id = @clientId', keyRange('d.order_created_at', 'd.order_id', s)].join(' AND ')}
       ORDER BY d.order_created_at ${dir}, d.order_id ${dir} LIMIT ${cap}) f
     WHERE ${itemTerms('f', s, idIn).join(' AND ')}
     GROUP BY f.order_created_at, f.order_id ORDER BY f.order_created_at ${dir}, f.order_id ${dir} LIMIT @limit`;
}

/**
 * Conditions on the order (`at`, `oid`: its created_at and order_id) that the driver does not already guarantee.
 * Each is one seek of an index that leads by (client_id, vendor_id or created_at, order_id): its cost does not grow
 * with the order's items. An item driver tests them once per order (HAVING), not once per item row: a client's
 * orders of 250 items each made the vendor path test 250 × 250 items per order.
 */
export function existsTerms(
  at: string,
  oid: string,
  s: SearchShape,
  idIn: (column: string) => string,
): string[] {
  const items = itemTerms('i', s, idIn);
  // The order path reads orders by a necessary condition only: its items are checked like any other driver's.
  const itemsGuaranteed = s.driver === 'updated-items' || s.driver === 'dated-items';
  // A scalar subquery with LIMIT 1 rather than EXISTS: PostgreSQL turns an EXISTS into a semi-join or a hashed
  // subplan, which reads every item of the client, whatever the limit; this one runs per order, a seek each.
  const anyItem = (alias: string, terms: string[]) =>
    `(SELECT 1 FROM order_items ${alias} WHERE ${alias}.client_id = @clientId AND ${alias}.order_created_at = ${at}
       AND ${alias}.order_id = ${oid} AND ${terms.join(' AND ')} LIMIT 1) IS NOT NULL`;
  return [
    ...(s.vendor && s.driver !== 'vendor-items' ? [anyItem('v', ['v.vendor_id = @vendorId'])] : []),
    ...(items.length > 0 && !itemsGuaranteed ? [anyItem('i', items)] : []),
  ];
}

/**
 * The terms of the order path (alias `u`): orders with an item updated since the range's start, in the window,
 * each one's items and vendor checked by a seek. `at` is how the store names u.created_at in the window's range.
 */
export function updatedOrderTerms(at: string, s: SearchShape, idIn: (column: string) => string): string[] {
  return [
    'u.client_id = @clientId',
    `${orderUpdateKey('u')} >= @scanFrom`,
    keyRange(at, 'u.order_id', s),
    ...existsTerms('u.created_at', 'u.order_id', s, idIn),
  ];
}
