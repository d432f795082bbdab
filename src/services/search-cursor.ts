/**
 * Stateless search cursors: `metadata.next` is an integer (SPEC.md), so what a cursor needs travels in it, sealed
 * under a key of the store. Nothing is stored per page.
 *
 * Time is counted in quarter hours. A cursor holds the last orderId of its page (its createDate is read back from
 * the order, which is never deleted), the quarter hour it was issued in (modulo 128: its age), how many quarter
 * hours before that the search's first page was answered (which window "the last 90 days" is), and 5 check bits:
 * an HMAC of the client, the criteria, both whole quarter hours and the orderId. Those 52 bits go through a
 * 4-round Feistel permutation keyed by the store's key and tweaked by the client and the criteria: a cursor reveals
 * nothing, and one altered, forged, of another client or for other criteria opens to an orderId that is not one
 * of this client's orders (so it is refused) but for the odd one, whose check bits then fail 31 times in 32. A
 * cursor can only ever lead to the client's own orders.
 */
import crypto from 'node:crypto';

/** The unit of a cursor's times. */
export const QUARTER_MS = 900_000;
const HALF_BITS = 26;
const HALF = 2 ** HALF_BITS;
const ISSUED_BITS = 7;
const SPAN_BITS = 8;
const ID_BITS = 32;
const CHECK_BITS = 5;
const ROUNDS = 4;
/** A cursor is refused once this long has passed since the quarter hour it was issued in. */
export const CURSOR_TTL_MS = 86_400_000;
/** A search whose first page is older than this (about 64 hours) cannot be paged further. */
export const MAX_PAGING_SPAN_MS = (2 ** SPAN_BITS - 1) * QUARTER_MS;

/** What a cursor carries, decoded. */
export interface CursorState {
  /** The quarter hour (epoch ms) the search's first page was answered in. */
  origin: number;
  /** The quarter hour (epoch ms) the page that issued it was answered in. */
  issued: number;
  /** The last orderId of that page. */
  orderId: number;
}

/** Who may use a cursor: the client and the criteria (criteriaHash) of its search. */
export interface CursorScope {
  key: Buffer;
  clientId: number;
  criteriaHash: string;
}

/** The quarter hour `at` falls in, as epoch ms. */
export const quarterOf = (at: number): number => Math.floor(at / QUARTER_MS) * QUARTER_MS;

/** Order ids a cursor can carry: below 2^32 (an order past it cannot be paged after; docs/api.md, Details). */
export const MAX_CURSOR_ORDER_ID = 2 ** ID_BITS - 1;

/** The cursor; `issued - origin` at most MAX_PAGING_SPAN_MS (decodeCursor refuses older searches). */
export function encodeCursor(scope: CursorScope, state: CursorState): number {
  const span = (state.issued - state.origin) / QUARTER_MS;
  if (!Number.isSafeInteger(state.orderId) || state.orderId < 1 || state.orderId > MAX_CURSOR_ORDER_ID)
    throw new Error(`search cursor: orderId ${state.orderId} is outside 1..2^32-1`);
  if (!Number.isInteger(span) || span < 0 || span >= 2 ** SPAN_BITS)
    throw new Error(`search cursor: a first page ${span} quarter hours old`);
  const issued = (state.issued / QUARTER_MS) % 2 ** ISSUED_BITS;
  const plain =
    ((issued * 2 ** SPAN_BITS + span) * 2 ** ID_BITS + state.orderId) * 2 ** CHECK_BITS + check(scope, state);
  return permute(scope, plain, false) + 1;
}

/**
 * The cursor's state, or null when it was not issued for this scope at most CURSOR_TTL_MS before `now`, or its
 * search's first page is more than MAX_PAGING_SPAN_MS before now's quarter hour (its next cursor would not fit).
 */
export function decodeCursor(scope: CursorScope, value: number, now: number): CursorState | null {
  if (!Number.isSafeInteger(value) || value < 1 || value > 2 ** (2 * HALF_BITS)) return null;
  let rest = permute(scope, value - 1, true);
  const take = (bits: number) => {
    const part = rest % 2 ** bits;
    rest = Math.floor(rest / 2 ** bits);
    return part;
  };
  const checkBits = take(CHECK_BITS);
  const orderId = take(ID_BITS);
  const span = take(SPAN_BITS);
  const residue = take(ISSUED_BITS);
  // The latest quarter hour at or before now with that residue (the check bits hold the whole of it).
  const nowQuarter = Math.floor(now / QUARTER_MS);
  const cycle = 2 ** ISSUED_BITS;
  const issued = (nowQuarter - ((((nowQuarter - residue) % cycle) + cycle) % cycle)) * QUARTER_MS;
  const state = { origin: issued - span * QUARTER_MS, issued, orderId };
  if (orderId < 1 || checkBits !== check(scope, state) || now - issued > CURSOR_TTL_MS) return null;
  if (quarterOf(now) - state.origin > MAX_PAGING_SPAN_MS) return null;
  return state;
}

const hmac = (scope: CursorScope, ...parts: (string | number)[]): Buffer =>
  crypto
    .createHmac('sha256', scope.key)
    .update([scope.clientId, scope.criteriaHash, ...parts].join('\n'))
    .digest();

function check(scope: CursorScope, { origin, issued, orderId }: CursorState): number {
  return hmac(scope, 'check', origin, issued, orderId).readUInt8(0) % 2 ** CHECK_BITS;
}

/** A balanced Feistel network over 52 bits, each round's function an HMAC of the scope and the half. */
function permute(scope: CursorScope, value: number, inverse: boolean): number {
  let left = Math.floor(value / HALF);
  let right = value % HALF;
  for (let i = 0; i < ROUNDS; i++) {
    const round = inverse ? ROUNDS - 1 - i : i;
    if (inverse) {
      [left, right] = [right ^ roundValue(scope, round, left), left];
    } else {
      [left, right] = [right, left ^ roundValue(scope, round, right)];
    }
  }
  return left * HALF + right;
}

const roundValue = (scope: CursorScope, round: number, half: number): number =>
  hmac(scope, 'round', round, half).readUInt32BE(0) % HALF;
