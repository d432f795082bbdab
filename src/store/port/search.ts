/** Part of the store port (../store.port.ts): order search. */
import type { ItemView, OrderView } from './orders.js';

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
  /** Each order with only the items matching the item criteria, sorted by orderItemId; read in one snapshot. */
  orders: { order: OrderView; items: ItemView[] }[];
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

export interface SearchStore {
  /** One page of the client's orders matching the criteria, and whether more follow. */
  search(clientId: number, criteria: SearchCriteria): Promise<SearchPage>;
  /** Stores a cursor under a fresh random id and returns it; cursors created before `expiredBefore` are dropped. */
  issueCursor(cursor: Omit<SearchCursor, 'cursorId'>, expiredBefore: number): Promise<number>;
  /** The cursor, only when this client was given it at or after `issuedSince`. */
  findCursor(cursorId: number, clientId: number, issuedSince: number): Promise<SearchCursor | null>;
}
