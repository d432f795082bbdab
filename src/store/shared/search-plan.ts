/**
 * What both adapters decide the same way before writing any SQL: which access path leads a search, the shape
 * of its statement, and the bounds derived from the criteria. Pure: no driver, no SQL.
 */
import type { SearchCriteria } from '../port/store.port.js';

/** The access path that leads a search; see chooseDriver. */
export type Driver =
  'order-ids' | 'item-ids' | 'reference' | 'updated-items' | 'vendor-items' | 'dated-items' | 'orders';

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
 * Conditions on the order (`at`, `oid`: its created_at and order_id) that the driver does not already guarantee.
 * Each is one seek of an index that leads by (client_id, vendor_id or created_at, order_id): its cost does not grow
 * with the order's items. An item driver tests them once per order (HAVING), not once per item row: a client's
 * orders of 250 items each made the vendor path test 250 × 250 items per order (issue 41).
 */
export function existsTerms(
  at: string,
  oid: string,
  s: SearchShape,
  idIn: (column: string) => string,
): string[] {
  const items = itemTerms('i', s, idIn);
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
