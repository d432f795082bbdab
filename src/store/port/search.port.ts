/** Part of the store port (../store.port.ts): order search. */
import type { ItemView, OrderView } from './orders.port.js';

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
  /**
   * The page ends before the order that would take its items past this many, each order counted by all its items
   * (an upper bound of those the item criteria keep), so that a page's size is known before its items are read;
   * its first order is always read (an order holds at most 250 items). No bound when absent.
   */
  maxItems?: number;
  /** Continue strictly after this key (keyset paging). */
  after?: OrderKey;
}

export interface SearchPage {
  /** Each order with only the items matching the item criteria, sorted by orderItemId; read in one snapshot. */
  orders: { order: OrderView; items: ItemView[] }[];
  more: boolean;
}

export interface SearchStore {
  /** One page of the client's orders matching the criteria, and whether more follow. */
  search(clientId: number, criteria: SearchCriteria): Promise<SearchPage>;
  /** Where the client's order sits in a result; null when it is absent or another client's. */
  orderKey(clientId: number, orderId: number): Promise<OrderKey | null>;
  /**
   * The key that seals search cursors (services/search-cursor.ts): derived from the store's token-hashing key, so
   * the same in every process of a deployment and across SECRETS_KEY rotations.
   */
  readonly cursorKey: Buffer;
}
