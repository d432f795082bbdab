import { describe, it, expect } from 'vitest';
import {
  CURRENCIES,
  convertCents,
  divRoundHalfAway,
  fromCents,
  loadUsdPer,
  parseScaledDecimal,
  toCents,
  type UsdPer,
} from '../../src/domain/money.js';

const usdPer: UsdPer = { USD: 1_000_000n, EUR: 1_080_000n, GBP: 1_270_000n };

describe('toCents', () => {
  it('parses decimals with at most two places exactly, where float multiplication would not', () => {
    expect(toCents(0.29)).toBe(29); // 0.29 * 100 = 28.999999999999996 in floats
    expect(toCents(19.99)).toBe(1999);
    expect(toCents(1.15)).toBe(115); // 1.15 * 100 = 114.99999999999999 in floats
    expect(toCents(4.35)).toBe(435); // 4.35 * 100 = 434.99999999999994 in floats
    expect(toCents(0.1)).toBe(10);
    expect(toCents(0.07)).toBe(7);
    expect(toCents(1.5)).toBe(150);
    expect(toCents(123456789.12)).toBe(12345678912);
  });

  it('reads integers and exponent notation', () => {
    expect(toCents(0)).toBe(0);
    expect(toCents(42)).toBe(4200);
    expect(toCents(1e2)).toBe(10000);
    expect(toCents(1.234e5)).toBe(12340000); // 123400.00
  });

  it('keeps the sign and never returns -0', () => {
    expect(toCents(-1.5)).toBe(-150);
    expect(Object.is(toCents(-0), 0)).toBe(true);
  });

  it('returns null for more than two decimals', () => {
    expect(toCents(1.005)).toBeNull();
    expect(toCents(2.675)).toBeNull();
    expect(toCents(0.001)).toBeNull();
    expect(toCents(1e-7)).toBeNull(); // String(1e-7) is "1e-7"
    expect(toCents(0.1 + 0.2)).toBeNull(); // 0.30000000000000004
  });

  it('returns null for non-finite or unsafe amounts', () => {
    expect(toCents(Number.NaN)).toBeNull();
    expect(toCents(Number.POSITIVE_INFINITY)).toBeNull();
    expect(toCents(Number.NEGATIVE_INFINITY)).toBeNull();
    expect(toCents(1e21)).toBeNull(); // 1e23 cents is past Number.MAX_SAFE_INTEGER
  });

  it('returns null for a number sent as text (a caller outside the type checker)', () => {
    expect(toCents('1.5' as unknown as number)).toBeNull();
  });
});

describe('fromCents', () => {
  it('gives a JSON number with at most two decimals', () => {
    expect(fromCents(1999)).toBe(19.99);
    expect(fromCents(5)).toBe(0.05);
    expect(fromCents(-150)).toBe(-1.5);
    expect(fromCents(115)).toBe(1.15);
    expect(fromCents(43500)).toBe(435);
    expect(Object.is(fromCents(0), 0)).toBe(true);
    expect(Object.is(fromCents(-0), 0)).toBe(true);
  });

  it('prints as the two-decimal literal and round-trips through toCents for every cent up to 1000.00', () => {
    const misfits: number[] = [];
    for (let cents = 0; cents <= 100_000; cents += 1) {
      const amount = fromCents(cents);
      if (!/^\d+(\.\d{1,2})?$/.test(String(amount)) || toCents(amount) !== cents) misfits.push(cents);
    }
    expect(misfits).toEqual([]);
  });

  it('refuses non-integer cents', () => {
    expect(() => fromCents(1.5)).toThrow(new RangeError('cents must be a safe integer, got 1.5'));
  });
});

describe('divRoundHalfAway', () => {
  it('rounds exact halves away from zero', () => {
    expect(divRoundHalfAway(5n, 2n)).toBe(3); // 2.5
    expect(divRoundHalfAway(-5n, 2n)).toBe(-3); // -2.5
    expect(divRoundHalfAway(15n, 10n)).toBe(2); // 1.5
    expect(divRoundHalfAway(-15n, 10n)).toBe(-2); // -1.5
  });

  it('rounds other fractions to the nearest integer', () => {
    expect(divRoundHalfAway(14n, 10n)).toBe(1); // 1.4
    expect(divRoundHalfAway(2n, 3n)).toBe(1); // 0.667
    expect(divRoundHalfAway(1n, 3n)).toBe(0); // 0.333
    expect(Object.is(divRoundHalfAway(-1n, 3n), 0)).toBe(true); // -0.333, and not -0
    expect(divRoundHalfAway(0n, 7n)).toBe(0);
    expect(divRoundHalfAway(12n, 4n)).toBe(3);
  });

  it('refuses a non-positive denominator and an unsafe result', () => {
    expect(() => divRoundHalfAway(1n, 0n)).toThrow(new RangeError('denominator must be positive, got 0'));
    expect(() => divRoundHalfAway(1n, -2n)).toThrow(new RangeError('denominator must be positive, got -2'));
    expect(() => divRoundHalfAway(2n ** 60n, 1n)).toThrow(new RangeError(`${2n ** 60n}/1 is out of range`));
  });
});

describe('parseScaledDecimal', () => {
  it('scales exactly and refuses extra precision', () => {
    expect(parseScaledDecimal('1.08', 6)).toBe(1_080_000n);
    expect(parseScaledDecimal('6.875', 4)).toBe(68_750n);
    expect(parseScaledDecimal('1.500', 2)).toBe(150n); // trailing zeros are not precision
    expect(parseScaledDecimal('1.0000001', 6)).toBeNull();
    expect(parseScaledDecimal('abc', 2)).toBeNull();
    expect(parseScaledDecimal(' 1', 2)).toBeNull();
  });

  it('reads an exponent with or without its sign, of any length', () => {
    expect(parseScaledDecimal('1e2', 2)).toBe(10_000n);
    expect(parseScaledDecimal('1.5e+1', 2)).toBe(1_500n);
    expect(parseScaledDecimal('15e-1', 2)).toBe(150n);
    expect(parseScaledDecimal('1E10', 0)).toBe(10_000_000_000n);
    expect(parseScaledDecimal('-2.5', 1)).toBe(-25n);
  });

  it('reads the whole text or nothing', () => {
    for (const text of ['1.08abc', 'abc1.08', '1.08 ', '1.0.8', '--1', '1e', '.5', '']) {
      expect(parseScaledDecimal(text, 6), text).toBeNull();
    }
  });
});

describe('loadUsdPer', () => {
  it('loads the shipped rates in micro-dollars', () => {
    // USD 1.00, EUR 1.08, GBP 1.27
    expect(loadUsdPer()).toEqual({ USD: 1_000_000n, EUR: 1_080_000n, GBP: 1_270_000n });
  });

  it('accepts numbers or strings, wrapped in usdPer or bare', () => {
    expect(loadUsdPer({ usdPer: { USD: 1, EUR: 1.08, GBP: '1.27' } })).toEqual(usdPer);
    expect(loadUsdPer({ USD: '1', EUR: '1.080000', GBP: 1.27 })).toEqual(usdPer);
  });

  it('fails fast on a missing, unknown, zero, negative or too precise rate', () => {
    expect(() => loadUsdPer({ usdPer: { USD: 1, EUR: 1.08 } })).toThrow();
    expect(() => loadUsdPer({ usdPer: { USD: 1, EUR: 1.08, GBP: 1.27, JPY: 0.0067 } })).toThrow();
    expect(() => loadUsdPer({ usdPer: { USD: 1, EUR: 0, GBP: 1.27 } })).toThrow();
    expect(() => loadUsdPer({ usdPer: { USD: 1, EUR: -1.08, GBP: 1.27 } })).toThrow();
    expect(() => loadUsdPer({ usdPer: { USD: 1, EUR: '1.0800001', GBP: 1.27 } })).toThrow();
    expect(() => loadUsdPer({ usdPer: { USD: 1, EUR: 'one', GBP: 1.27 } })).toThrow();
    expect(() => loadUsdPer({ usdPer: { USD: 1, EUR: '1.08abc', GBP: 1.27 } })).toThrow(
      /expected a positive decimal with at most 6 decimals, got 1.08abc/,
    );
  });
});

describe('convertCents', () => {
  it('returns the same cents for the same currency', () => {
    for (const currency of CURRENCIES) expect(convertCents(1999, currency, currency, usdPer)).toBe(1999);
  });

  it('converts by usdPer[from] / usdPer[to]', () => {
    expect(convertCents(1000, 'GBP', 'USD', usdPer)).toBe(1270); // 1000 × 1.27
    expect(convertCents(1000, 'USD', 'GBP', usdPer)).toBe(787); // 1000 / 1.27 = 787.40
    expect(convertCents(1999, 'USD', 'EUR', usdPer)).toBe(1851); // 1999 / 1.08 = 1850.93
    expect(convertCents(1000, 'GBP', 'EUR', usdPer)).toBe(1176); // 1000 × 1.27 / 1.08 = 1175.93
    expect(convertCents(1000, 'EUR', 'GBP', usdPer)).toBe(850); // 1000 × 1.08 / 1.27 = 850.39
    expect(convertCents(0, 'EUR', 'USD', usdPer)).toBe(0);
  });

  it('rounds exact half cents away from zero', () => {
    expect(convertCents(50, 'GBP', 'USD', usdPer)).toBe(64); // 50 × 1.27 = 63.5
    expect(convertCents(-50, 'GBP', 'USD', usdPer)).toBe(-64); // -63.5
    expect(convertCents(950, 'GBP', 'USD', usdPer)).toBe(1207); // 950 × 1.27 = 1206.5
    expect(convertCents(54, 'GBP', 'EUR', usdPer)).toBe(64); // 54 × 127 / 108 = 63.5
  });

  it('refuses non-integer cents', () => {
    expect(() => convertCents(10.5, 'USD', 'EUR', usdPer)).toThrow(
      new RangeError('cents must be a safe integer, got 10.5'),
    );
  });
});
