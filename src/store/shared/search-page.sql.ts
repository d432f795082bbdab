/**
 * The statement that reads the keys and rows of a search's page (one more order than its limit, which tells that
 * more follow), the same on both stores but for what each says of itself (PageDialect): how it names its
 * indexes, its ids and its item counts, and how it reads the orders updated in a range.
 */
import { existsTerms, itemTerms, keyRange, type Driver, type SearchShape } from './search-plan.js';

export interface PageDialect {
  /** The store's item count of the order `o` (ITEMS_OF_ORDER). */
  itemsOfOrder: string;
  /** The store's way to test a column against @orderItemIds. */
  idIn: (column: string) => string;
  /** The orders a driver that reads orders reads, aliased `o`, and the terms it adds for them. */
  orders: Record<OrderDriver, { source: string; terms?: string[] }>;
  /** What follows `order_items d` for a driver that reads the keys of orders from an index of items (a hint). */
  itemIndex: (driver: ItemDriver) => string;
  /** The keys (`at`, `id`) of the orders with an item updated in the range (the updated-orders driver). */
  updatedOrderKeys: (s: SearchShape) => string;
  /** The page's rows from its keys (`keys`, with `at` and `id`), in `dir` when the store needs it said. */
  keysFirst: (columns: string, keys: string, dir: string) => string;
}

export type OrderDriver = 'orders' | 'reference' | 'order-ids' | 'item-ids';
export type ItemDriver = 'vendor-items' | 'dated-items' | 'updated-items';

// Drivers that read the keys of orders from an index of items, each its own: the terms it seeks on.
const ITEM_TERMS: Record<ItemDriver, (s: SearchShape, idIn: PageDialect['idIn']) => string[]> = {
  // order_items_client_vendor (client_id, vendor_id, order_created_at, order_id)
  'vendor-items': () => ['d.vendor_id = @vendorId'],
  // order_items_search_created (client_id, order_created_at, order_id, updated_at): in result order, the update
  // times checked inside the index.
  'dated-items': (s, idIn) => itemTerms('d', s, idIn),
  // order_items_search_updated (client_id, updated_at, order_created_at, order_id): the few items updated.
  'updated-items': () => ['d.updated_at >= @scanFrom', 'd.updated_at < @scanTo'],
};

const isItemDriver = (driver: Driver): driver is ItemDriver => driver in ITEM_TERMS;

/**
 * What the page reads of each order, named (never `o.*`: the statement's result does not change when a column
 * is added), in the order of the port's OrderView, then its items' count, for where the page ends (pageLength).
 */
export const pageColumns = (d: Pick<PageDialect, 'itemsOfOrder'>): string =>
  `o.order_id, o.created_at, o.currency, o.tax_cents, o.tax_model, o.reference_id, ${d.itemsOfOrder} AS item_count`;

/** The page of the search `s`: its orders, `limit + 1` of them, in result order, as pageColumns names them. */
export function pageSql(s: SearchShape, d: PageDialect): string {
  const dir = s.desc ? 'DESC' : 'ASC';
  const columns = pageColumns(d);
  if (s.driver === 'updated-orders') return d.keysFirst(columns, d.updatedOrderKeys(s), dir);
  if (isItemDriver(s.driver)) {
    const where = [
      'd.client_id = @clientId',
      ...ITEM_TERMS[s.driver](s, d.idIn),
      keyRange('d.order_created_at', 'd.order_id', s),
    ];
    // The order's other conditions once per order, after its item rows are grouped.
    const having = existsTerms('d.order_created_at', 'd.order_id', s, d.idIn);
    const group = `GROUP BY d.order_created_at, d.order_id${having.length > 0 ? ` HAVING ${having.join(' AND ')}` : ''}`;
    const keys = `SELECT d.order_created_at AS at, d.order_id AS id FROM order_items d${d.itemIndex(s.driver)}
      WHERE ${where.join(' AND ')}
      ${group} ORDER BY at ${dir}, id ${dir} LIMIT @limit`;
    return d.keysFirst(columns, keys, dir);
  }
  const { source, terms = [] } = d.orders[s.driver];
  const where = [
    'o.client_id = @clientId',
    keyRange('o.created_at', 'o.order_id', s),
    ...terms,
    ...(s.reference ? ['o.reference_id = @referenceId'] : []),
    ...existsTerms('o.created_at', 'o.order_id', s, d.idIn),
  ];
  return `SELECT ${columns} FROM ${source} WHERE ${where.join(' AND ')}
          ORDER BY o.created_at ${dir}, o.order_id ${dir} LIMIT @limit`;
}
