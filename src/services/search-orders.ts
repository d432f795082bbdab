import crypto from 'node:crypto';
import type { OrderKey, SortOrder, Store } from '../store/port/store.port.js';
import { nextTurn } from './loop-turns.js';
import { toOrderResponse, type OrderResponse } from './order-view.js';
import { decodeCursor, encodeCursor, quarterOf, type CursorScope } from './search-cursor.js';

const DAY_MS = 86_400_000;
export const DEFAULT_WINDOW_MS = 90 * DAY_MS;

/**
 * Most items a page of a search holds (docs/api.md#search): a page ends before the order that would take it past
 * this many, counted with all the items of each order, and `next` goes on from there; its first order is always
 * there (an order has at most 250 items). A page's cost to the web (read, mapped, written on its one thread) and
 * its bytes (~100 an item, some 25 KB at most) are known before its items are read.
 */
export const MAX_PAGE_ITEMS = 250;

/** A validated GET /v1/orders query: dates in epoch ms, absent when not given. */
export interface OrderSearchRequest {
  dateStart?: number;
  dateEnd?: number;
  itemUpdateDateStart?: number;
  itemUpdateDateEnd?: number;
  vendorId?: number;
  referenceId?: string;
  orderId?: number[];
  orderItemId?: number[];
  sortOrder: SortOrder;
  limit: number;
  next?: number;
}

export interface OrderSearchResponse {
  orders: OrderResponse[];
  metadata: { orderResponseSize: number; next?: number };
}

/** `items`: how many the page holds, what it is charged by. */
export type SearchOutcome =
  { kind: 'found'; body: OrderSearchResponse; items: number } | { kind: 'bad-cursor'; message: string };

export interface SearchDeps {
  clock: () => number;
  store: Pick<Store, 'search' | 'orders'>;
}

/**
 * The created-date window [dateStart, dateEnd) of SPEC.md's defaults, for a search whose first page was answered
 * at `firstPageAt`. With neither bound given it is the 90 days before the start of that quarter hour, up to `endAt`:
 * 1 ms after now (so that an order created in this very millisecond is included). A cursor carries the quarter
 * hour, so the later pages keep the start of the first.
 */
export function resolveWindow(
  q: OrderSearchRequest,
  firstPageAt: number,
  endAt = firstPageAt + 1,
): { dateStart: number; dateEnd: number } {
  if (q.dateStart !== undefined && q.dateEnd !== undefined)
    return { dateStart: q.dateStart, dateEnd: q.dateEnd };
  if (q.dateStart !== undefined) return { dateStart: q.dateStart, dateEnd: q.dateStart + DEFAULT_WINDOW_MS };
  if (q.dateEnd !== undefined) return { dateStart: q.dateEnd - DEFAULT_WINDOW_MS, dateEnd: q.dateEnd };
  return { dateStart: quarterOf(firstPageAt) - DEFAULT_WINDOW_MS, dateEnd: endAt };
}

/** Identifies the criteria a cursor continues: everything but limit and next, id lists as sets. */
export function criteriaHash(q: OrderSearchRequest): string {
  const canonical = {
    dateStart: q.dateStart,
    dateEnd: q.dateEnd,
    itemUpdateDateStart: q.itemUpdateDateStart,
    itemUpdateDateEnd: q.itemUpdateDateEnd,
    vendorId: q.vendorId,
    referenceId: q.referenceId,
    orderId: q.orderId && uniqueSorted(q.orderId),
    orderItemId: q.orderItemId && uniqueSorted(q.orderItemId),
    sortOrder: q.sortOrder,
  };
  return crypto.createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}

const uniqueSorted = (ids: readonly number[]): number[] => [...new Set(ids)].sort((a, b) => a - b);

/**
 * One page of the client's order history. `next` is a sealed cursor (search-cursor.ts) naming the last order
 * returned and the quarter hour of the first page: the next page continues strictly after that order's
 * (createDate, orderId), in the same window, so orders arriving meanwhile never shift the pages.
 */
export async function searchOrders(
  deps: SearchDeps,
  clientId: number,
  q: OrderSearchRequest,
): Promise<SearchOutcome> {
  const now = deps.clock();
  const scope: CursorScope = { key: deps.store.search.cursorKey, clientId, criteriaHash: criteriaHash(q) };
  const start: Start | null =
    q.next === undefined
      ? { origin: quarterOf(now), window: resolveWindow(q, now) }
      : await resume(deps, scope, q, now);
  if (!start)
    return {
      kind: 'bad-cursor',
      message:
        'next: not a cursor issued to this client for these criteria in the last 24 hours; repeat the criteria of the first page, or search again without it',
    };
  // Its page is read and mapped in a turn of the event loop of its own: searches let in together (their tokens
  // taken by one call to Redis) do not hold the loop one after another, other requests waiting behind them all.
  await nextTurn();
  const page = await deps.store.search.search(clientId, {
    ...start.window,
    itemUpdateStart: q.itemUpdateDateStart,
    itemUpdateEnd: q.itemUpdateDateEnd,
    vendorId: q.vendorId,
    referenceId: q.referenceId,
    orderIds: q.orderId && uniqueSorted(q.orderId),
    orderItemIds: q.orderItemId && uniqueSorted(q.orderItemId),
    sortOrder: q.sortOrder,
    limit: q.limit,
    maxItems: MAX_PAGE_ITEMS,
    after: start.after,
  });
  const orders = page.orders.map(({ order, items }) => toOrderResponse(order, items));
  const last = page.orders.at(-1)?.order;
  const next =
    page.more && last
      ? encodeCursor(scope, { origin: start.origin, issued: quarterOf(now), orderId: last.orderId })
      : undefined;
  const metadata = { orderResponseSize: orders.length, ...(next !== undefined ? { next } : {}) };
  const items = page.orders.reduce((sum, { items }) => sum + items.length, 0);
  return { kind: 'found', body: { orders, metadata }, items };
}

interface Start {
  /** The quarter hour of the search's first page. */
  origin: number;
  window: { dateStart: number; dateEnd: number };
  after?: OrderKey;
}

/** Where the page behind a `next` starts, when it opens for this client and criteria and names its order. */
async function resume(
  deps: SearchDeps,
  scope: CursorScope,
  q: OrderSearchRequest,
  now: number,
): Promise<Start | null> {
  const cursor = decodeCursor(scope, q.next!, now);
  const after = cursor && (await deps.store.search.orderKey(scope.clientId, cursor.orderId));
  if (!cursor || !after) return null;
  return { origin: cursor.origin, window: resolveWindow(q, cursor.origin, now + 1), after };
}

/**
 * The client's order with every item and its itemUpdateDate, and how many items it holds (what reading it is
 * charged by); null when absent or another client's.
 */
export async function getClientOrder(
  deps: Pick<SearchDeps, 'store'>,
  clientId: number,
  orderId: number,
): Promise<{ order: OrderResponse; items: number } | null> {
  const stored = await deps.store.orders.getForClient(clientId, orderId);
  return stored && { order: toOrderResponse(stored.order, stored.items), items: stored.items.length };
}
