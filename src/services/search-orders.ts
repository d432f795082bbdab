import crypto from 'node:crypto';
import type { OrderKey, SortOrder, Store } from '../store/store.port.js';
import { toOrderResponse, type OrderResponse } from './order-view.js';

const DAY_MS = 86_400_000;
export const DEFAULT_WINDOW_MS = 90 * DAY_MS;
/** How long a metadata.next stays valid; older ones are refused and dropped. */
export const CURSOR_TTL_MS = DAY_MS;

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

export type SearchOutcome =
  { kind: 'found'; body: OrderSearchResponse } | { kind: 'bad-cursor'; message: string };

export interface SearchDeps {
  clock: () => number;
  store: Pick<Store, 'search' | 'orders'>;
}

/**
 * The created-date window [dateStart, dateEnd) of SPEC.md's defaults. With neither bound given it ends 1 ms
 * after now, so that an order created in this very millisecond is included.
 */
export function resolveWindow(q: OrderSearchRequest, now: number): { dateStart: number; dateEnd: number } {
  if (q.dateStart !== undefined && q.dateEnd !== undefined)
    return { dateStart: q.dateStart, dateEnd: q.dateEnd };
  if (q.dateStart !== undefined) return { dateStart: q.dateStart, dateEnd: q.dateStart + DEFAULT_WINDOW_MS };
  if (q.dateEnd !== undefined) return { dateStart: q.dateEnd - DEFAULT_WINDOW_MS, dateEnd: q.dateEnd };
  return { dateStart: now - DEFAULT_WINDOW_MS, dateEnd: now + 1 };
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
 * One page of the client's order history. `next` is the id of a server-side cursor holding the client, the
 * criteria hash, the window as first resolved and the last (createDate, orderId) returned: the next page
 * continues strictly after that key, so orders arriving meanwhile never shift the pages.
 */
export async function searchOrders(
  deps: SearchDeps,
  clientId: number,
  q: OrderSearchRequest,
): Promise<SearchOutcome> {
  const now = deps.clock();
  const hash = criteriaHash(q);
  const start: Start | { message: string } =
    q.next === undefined
      ? { window: resolveWindow(q, now) }
      : await resume(deps, clientId, q.next, hash, now);
  if ('message' in start) return { kind: 'bad-cursor', message: start.message };
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
    after: start.after,
  });
  const orders = page.orders.map(({ order, items }) => toOrderResponse(order, items));
  const last = page.orders.at(-1)?.order;
  const next =
    page.more && last
      ? await deps.store.search.issueCursor(
          {
            clientId,
            criteriaHash: hash,
            ...start.window,
            after: { createdAt: last.createdAt, orderId: last.orderId },
            createdAt: now,
          },
          now - CURSOR_TTL_MS,
        )
      : undefined;
  const metadata = { orderResponseSize: orders.length, ...(next !== undefined ? { next } : {}) };
  return { kind: 'found', body: { orders, metadata } };
}

interface Start {
  window: { dateStart: number; dateEnd: number };
  after?: OrderKey;
}

/** Where the page behind a `next` starts: the cursor's window and key, when this client was given it. */
async function resume(
  deps: SearchDeps,
  clientId: number,
  cursorId: number,
  hash: string,
  now: number,
): Promise<Start | { message: string }> {
  const cursor = await deps.store.search.findCursor(cursorId, clientId, now - CURSOR_TTL_MS);
  if (!cursor)
    return {
      message: 'next: not a cursor issued to this client in the last 24 hours; search again without it',
    };
  if (cursor.criteriaHash !== hash)
    return { message: 'next: issued for other criteria; repeat those of the first page' };
  return { window: { dateStart: cursor.dateStart, dateEnd: cursor.dateEnd }, after: cursor.after };
}

/** The client's order with every item and its itemUpdateDate; null when absent or another client's. */
export async function getClientOrder(
  deps: Pick<SearchDeps, 'store'>,
  clientId: number,
  orderId: number,
): Promise<OrderResponse | null> {
  const stored = await deps.store.orders.getForClient(clientId, orderId);
  return stored ? toOrderResponse(stored.order, stored.items) : null;
}
