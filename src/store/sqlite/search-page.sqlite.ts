/**
 * Reading a search's page and its items, once its statements are chosen: the same code on the web's connection
 * and on the search thread's (search-thread.ts).
 */
import type { Database, Statement } from 'better-sqlite3';
import type { ItemView, OrderView, SearchPage } from '../port/store.port.js';
import { toItemView, type ItemTuple } from '../shared/order.rows.js';
import { pageLength } from '../shared/search-plan.js';

export type Bindings = Record<string, number | string | null>;

/** The statements of a page, as search.sqlite.ts builds them for the path its plan chose. */
export interface PageStatements {
  pageSql: string;
  itemsSql: string;
  /** Bindings of both; itemsSql also gets `pageIds`, a JSON array of the page's order ids. */
  params: Bindings;
  /** pageSql's rows, when the plan read them already. */
  rows?: unknown[][];
  /** SearchCriteria.maxItems: the page ends before the order that would take it past this many items. */
  maxItems?: number;
}

/** Each statement prepared once per connection, by its text. */
export function statementCache(db: Database): (sql: string) => Statement {
  const statements = new Map<string, Statement>();
  return (sql) => {
    let statement = statements.get(sql);
    if (!statement) statements.set(sql, (statement = db.prepare(sql)));
    return statement;
  };
}

/**
 * The page of `limit` orders (pageSql asks for one more, which tells whether more match) and their items. The
 * caller runs it in one read transaction, so both come from one snapshot. Raw rows mapped by hand cost half of
 * what better-sqlite3's row objects do.
 */
export function readPage(prepared: (sql: string) => Statement, p: PageStatements, limit: number): SearchPage {
  const rows = (p.rows ?? prepared(p.pageSql).raw(true).all(p.params)) as OrderTuple[];
  // Cut before its items are read: the page's size is known from the orders' item counts.
  const page = rows.slice(0, pageLength(rows.map(itemCountOf), limit, p.maxItems)).map(toOrderView);
  if (page.length === 0) return { orders: [], more: false };
  const pageIds = JSON.stringify(page.map((o) => o.orderId));
  const items = prepared(p.itemsSql)
    .raw(true)
    .all({ ...p.params, pageIds }) as ItemTuple[];
  const byOrder = new Map<number, ItemView[]>();
  for (const tuple of items) {
    const item = toItemView(tuple);
    const list = byOrder.get(item.orderId);
    if (list) list.push(item);
    else byOrder.set(item.orderId, [item]);
  }
  return {
    orders: page.map((order) => ({ order, items: byOrder.get(order.orderId) ?? [] })),
    more: rows.length > page.length,
  };
}

/** A row of pageSql (pageColumns, shared/search-page.sql.ts): the order as OrderView, then its items' count. */
type OrderTuple = [number, number, string, number | null, string | null, string | null, number];
const itemCountOf = (tuple: OrderTuple): number => tuple[6];
const toOrderView = ([
  orderId,
  createdAt,
  currency,
  taxCents,
  taxModel,
  referenceId,
]: OrderTuple): OrderView => ({
  orderId,
  createdAt,
  currency: currency as OrderView['currency'],
  taxCents,
  taxModel,
  referenceId,
});
