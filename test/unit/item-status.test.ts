import { describe, expect, it } from 'vitest';
import {
  BOUGHT_STATUSES,
  canMove,
  describeStatus,
  isFinal,
  isItemStatus,
  ItemStatus,
  ledgerKindOf,
  TRANSITIONS,
  updateMoves,
  type ItemStatusCode,
} from '../../src/domain/item-status.js';

// docs/api.md#item-statuses-and-moves, column "May move to", copied by hand: the table in src must say exactly this.
const CONTRACT_NEXT: Record<number, number[]> = {
  1: [5, 14, 19, 53, 54, 55, 60],
  5: [35, 14, 17, 93],
  93: [4, 90],
  4: [35, 14, 17],
  90: [],
  35: [24],
  24: [],
  14: [],
  17: [],
  19: [],
  53: [],
  54: [],
  55: [],
  60: [],
};
const CODES = Object.keys(CONTRACT_NEXT).map(Number) as ItemStatusCode[];
const PAIRS = CODES.flatMap((from) => CODES.map((to) => [from, to] as const));

// The money each allowed move makes, from section 8 and the ledger rules; every other move makes none.
const MONEY: Record<string, string> = {
  '5>14': 'void',
  '5>17': 'void',
  '93>90': 'void',
  '4>14': 'void',
  '4>17': 'void',
  '93>4': 'extra_shipping',
  '35>24': 'refund',
};

describe('the transition table', () => {
  it('holds the fourteen codes of the contract and their next codes', () => {
    expect(Object.values(ItemStatus).sort((a, b) => a - b)).toEqual([...CODES].sort((a, b) => a - b));
    for (const code of CODES) expect([...TRANSITIONS[code]].sort()).toEqual([...CONTRACT_NEXT[code]!].sort());
  });

  it('allows a move exactly when the contract lists it, for all 196 pairs', () => {
    for (const [from, to] of PAIRS)
      expect(canMove(from, to), `${from} -> ${to}`).toBe(CONTRACT_NEXT[from]!.includes(to));
  });

  it('calls final exactly the codes with no next code', () => {
    expect(CODES.filter(isFinal).sort((a, b) => a - b)).toEqual([14, 17, 19, 24, 53, 54, 55, 60, 90]);
  });

  it('counts 5, 93, 4 and 35 as bought', () => {
    expect([...BOUGHT_STATUSES].sort((a, b) => a - b)).toEqual([4, 5, 35, 93]);
  });

  it('knows only its own codes', () => {
    for (const code of [0, 2, 3, 6, 20, 99, 1000]) expect(isItemStatus(code)).toBe(false);
    for (const code of CODES) expect(isItemStatus(code)).toBe(true);
  });
});

describe('item updates', () => {
  it('may make every move of the table except those out of QUEUED, which are the worker’s', () => {
    expect(updateMoves(ItemStatus.QUEUED)).toEqual([]);
    for (const code of CODES.filter((c) => c !== ItemStatus.QUEUED))
      expect(updateMoves(code)).toEqual(TRANSITIONS[code]);
  });

  it('move money only when leaving the bought path, accepting extra shipping, or refunding', () => {
    for (const [from, to] of PAIRS)
      expect(ledgerKindOf(from, to), `${from} -> ${to}`).toBe(MONEY[`${from}>${to}`] ?? null);
  });

  it('name a status for an operator', () => {
    expect(describeStatus(ItemStatus.SHIPPED)).toBe('SHIPPED (35)');
    expect(describeStatus(ItemStatus.EXTRA_SHIPPING_REQUESTED)).toBe('EXTRA_SHIPPING_REQUESTED (93)');
  });
});
