import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  CURSOR_TTL_MS,
  MAX_PAGING_SPAN_MS,
  QUARTER_MS,
  decodeCursor,
  encodeCursor,
  quarterOf,
} from '../../src/services/search-cursor.js';

const HOUR = 3_600_000;
const NOW = Date.parse('2026-11-21T10:07:30.000Z');
const scope = { key: crypto.randomBytes(32), clientId: 7, criteriaHash: 'a'.repeat(64) };
// A page answered now, of a search whose first page was 30 hours ago.
const state = { origin: quarterOf(NOW - 30 * HOUR), issued: quarterOf(NOW), orderId: 123_456 };

describe('search cursors', () => {
  it('open to what they hold, for their client and criteria, until 24 hours after their quarter hour', () => {
    const next = encodeCursor(scope, state);
    expect(Number.isSafeInteger(next) && next >= 1 && next <= 2 ** 52).toBe(true);
    expect(decodeCursor(scope, next, NOW)).toEqual(state);
    expect(decodeCursor(scope, next, state.issued + CURSOR_TTL_MS)).toEqual(state);
    expect(decodeCursor(scope, next, state.issued + CURSOR_TTL_MS + 1)).toBeNull();
    expect(encodeCursor(scope, { ...state, orderId: 2 ** 32 - 1 })).toBeGreaterThan(0);
    expect(() => encodeCursor(scope, { ...state, orderId: 2 ** 32 })).toThrow(/outside/);
  });

  it('carry a first page up to about 64 hours back, and refuse to page a search older than that', () => {
    const oldest = { ...state, origin: state.issued - MAX_PAGING_SPAN_MS };
    expect(decodeCursor(scope, encodeCursor(scope, oldest), NOW)).toEqual(oldest);
    expect(decodeCursor(scope, encodeCursor(scope, oldest), state.issued + QUARTER_MS)).toBeNull();
    expect(() => encodeCursor(scope, { ...oldest, origin: oldest.origin - QUARTER_MS })).toThrow(/quarter/);
  });

  it('reveal nothing: neighbouring orders give unrelated integers', () => {
    const a = encodeCursor(scope, state);
    const b = encodeCursor(scope, { ...state, orderId: state.orderId + 1 });
    expect(Math.abs(a - b)).toBeGreaterThan(1000);
    expect(String(a)).not.toContain(String(state.orderId));
  });

  it("open another client's, other criteria's or another key's cursor to another order, or refuse it", () => {
    const next = encodeCursor(scope, state);
    const others = [
      { ...scope, clientId: 8 },
      { ...scope, criteriaHash: 'b'.repeat(64) },
      { ...scope, key: crypto.randomBytes(32) },
    ];
    for (const other of others) expect(decodeCursor(other, next, NOW)?.orderId).not.toBe(state.orderId);
    for (const bad of [0, -1, 1.5, 2 ** 52 + 1, Number.MAX_SAFE_INTEGER])
      expect(decodeCursor(scope, bad, NOW)).toBeNull();
  });

  it('refuse forged integers but for about 1 in 32 (whose orderId the search then finds no order of)', () => {
    let opened = 0;
    for (let i = 1; i <= 3200; i++) if (decodeCursor(scope, i * 9_007_199 + 1, NOW)) opened++;
    // About 100 expected, less those whose times are out of range; far more would mean the check bits do not check.
    expect(opened).toBeLessThan(200);
  });

  it('refuse a cursor so old that its quarter hour comes round again (32 hours) but for 1 in 32', () => {
    let opened = 0;
    for (let orderId = 1; orderId <= 320; orderId++) {
      const next = encodeCursor(scope, { ...state, orderId });
      if (decodeCursor(scope, next, state.issued + 128 * QUARTER_MS + HOUR)) opened++;
    }
    expect(opened).toBeLessThan(40);
  });
});
