/** Item status codes of docs/api.md#item-statuses-and-moves. */
export const ItemStatus = {
  QUEUED: 1,
  EXTRA_SHIPPING_ACCEPTED: 4,
  ORDERED: 5,
  ITEM_UNAVAILABLE: 14,
  CANCELLED_BY_BUYER: 17,
  CREDIT_CARD_REJECTED: 19,
  REFUNDED: 24,
  SHIPPED: 35,
  MAX_PRICE_EXCEEDED: 53,
  INACTIVE_SELLER: 54,
  TOTAL_MAX_PRICE_EXCEEDED: 55,
  FAILED: 60,
  EXTRA_SHIPPING_REJECTED: 90,
  EXTRA_SHIPPING_REQUESTED: 93,
} as const;

export type ItemStatusCode = (typeof ItemStatus)[keyof typeof ItemStatus];

const S = ItemStatus;

/** The one transition table: every path that changes a status asks it. */
export const TRANSITIONS: Readonly<Record<ItemStatusCode, readonly ItemStatusCode[]>> = {
  [S.QUEUED]: [
    S.ORDERED,
    S.ITEM_UNAVAILABLE,
    S.CREDIT_CARD_REJECTED,
    S.MAX_PRICE_EXCEEDED,
    S.INACTIVE_SELLER,
    S.TOTAL_MAX_PRICE_EXCEEDED,
    S.FAILED,
  ],
  [S.ORDERED]: [S.SHIPPED, S.ITEM_UNAVAILABLE, S.CANCELLED_BY_BUYER, S.EXTRA_SHIPPING_REQUESTED],
  [S.EXTRA_SHIPPING_REQUESTED]: [S.EXTRA_SHIPPING_ACCEPTED, S.EXTRA_SHIPPING_REJECTED],
  [S.EXTRA_SHIPPING_ACCEPTED]: [S.SHIPPED, S.ITEM_UNAVAILABLE, S.CANCELLED_BY_BUYER],
  [S.SHIPPED]: [S.REFUNDED],
  [S.EXTRA_SHIPPING_REJECTED]: [],
  [S.REFUNDED]: [],
  [S.ITEM_UNAVAILABLE]: [],
  [S.CANCELLED_BY_BUYER]: [],
  [S.CREDIT_CARD_REJECTED]: [],
  [S.MAX_PRICE_EXCEEDED]: [],
  [S.INACTIVE_SELLER]: [],
  [S.TOTAL_MAX_PRICE_EXCEEDED]: [],
  [S.FAILED]: [],
};

/** Statuses whose item is bought and paid for: its share of the payment stays authorised. */
export const BOUGHT_STATUSES: readonly ItemStatusCode[] = [
  S.ORDERED,
  S.EXTRA_SHIPPING_REQUESTED,
  S.EXTRA_SHIPPING_ACCEPTED,
  S.SHIPPED,
];

export function isItemStatus(code: number): code is ItemStatusCode {
  return Object.prototype.hasOwnProperty.call(TRANSITIONS, code);
}

export function canMove(from: ItemStatusCode, to: ItemStatusCode): boolean {
  return TRANSITIONS[from].includes(to);
}

export function isFinal(code: ItemStatusCode): boolean {
  return TRANSITIONS[code].length === 0;
}

export function statusName(code: ItemStatusCode): string {
  return Object.entries(ItemStatus).find(([, value]) => value === code)![0];
}

/**
 * The moves an item update (operator, seller, buyer, reconciliation) may make: the table's, except out of
 * QUEUED, which only the order worker makes because it prices and pays for the whole order at once.
 */
export function updateMoves(from: ItemStatusCode): readonly ItemStatusCode[] {
  return from === S.QUEUED ? [] : TRANSITIONS[from];
}

/** The money movement of a move, written to the ledger with it. */
export type LedgerKind = 'void' | 'extra_shipping' | 'refund';

/**
 * Leaving the bought path voids the item's share (and returns its stock), 35 → 24 refunds it, 93 → 4 adds
 * the extra shipping; null for a move that moves no money or that the table does not allow.
 */
export function ledgerKindOf(from: ItemStatusCode, to: ItemStatusCode): LedgerKind | null {
  if (!canMove(from, to)) return null;
  if (to === S.REFUNDED) return 'refund';
  // Stryker disable next-line ConditionalExpression: the table allows the move to 4 from 93 only
  if (from === S.EXTRA_SHIPPING_REQUESTED && to === S.EXTRA_SHIPPING_ACCEPTED) return 'extra_shipping';
  if (BOUGHT_STATUSES.includes(from) && !BOUGHT_STATUSES.includes(to)) return 'void';
  return null;
}

/** `SHIPPED (35)`: how an operator reads a code. */
export function describeStatus(code: ItemStatusCode): string {
  return `${statusName(code)} (${code})`;
}
