import { readFileSync } from 'node:fs';
import { z } from 'zod';

export type Currency = 'USD' | 'EUR' | 'GBP';

export const CURRENCIES: readonly Currency[] = ['USD', 'EUR', 'GBP'];

/** Micro-dollars per unit of each currency, e.g. EUR 1.08 -> 1_080_000n. */
export type UsdPer = Record<Currency, bigint>;

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/i;

/**
 * Parses a decimal string (plain or exponent notation, as `String(n)` prints it) into an integer scaled by
 * 10^scale, exactly; null when it is not a decimal or has more than `scale` significant decimals.
 */
export function parseScaledDecimal(text: string, scale: number): bigint | null {
  const match = DECIMAL.exec(text);
  if (!match) return null;
  // Stryker disable next-line StringLiteral: sign and whole always match (maybe empty), and Number('') is 0 too
  const [, sign = '', whole = '0', fraction = '', exponent = '0'] = match;
  let digits = whole + fraction;
  let shift = Number(exponent) - fraction.length + scale;
  // Trailing zeros past the scale are harmless ("1.500" at scale 2); anything else is too precise.
  // Stryker disable next-line ConditionalExpression,EqualityOperator: dropping more zeros while raising shift keeps the value
  while (shift < 0 && digits.endsWith('0')) {
    digits = digits.slice(0, -1);
    shift += 1;
  }
  if (shift < 0) return null;
  // Stryker disable next-line StringLiteral: BigInt('') is 0n too
  const magnitude = BigInt(digits || '0') * 10n ** BigInt(shift);
  return sign === '-' ? -magnitude : magnitude;
}

/**
 * Parses a JSON decimal with at most two decimals into integer cents; null if it has more decimals, is not
 * finite or does not fit a safe integer. Exact: it reads `String(amount)`, never multiplies floats.
 */
export function toCents(amount: number): number | null {
  if (!Number.isFinite(amount)) return null; // false for a non-number too
  const cents = parseScaledDecimal(String(amount), 2);
  if (cents === null) return null;
  const result = Number(cents);
  return Number.isSafeInteger(result) ? result : null;
}

/** Integer cents to a JSON number with at most two decimals, e.g. 1999 -> 19.99, 5 -> 0.05, -150 -> -1.5. */
export function fromCents(cents: number): number {
  assertSafeInteger(cents, 'cents');
  // One correctly rounded division lands on the same double as the literal "19.99"; `|| 0` drops -0.
  return cents / 100 || 0;
}

/** Rounds numerator/denominator (denominator > 0) half away from zero; throws if it is not a safe integer. */
export function divRoundHalfAway(numerator: bigint, denominator: bigint): number {
  if (denominator <= 0n) throw new RangeError(`denominator must be positive, got ${denominator}`);
  // Stryker disable next-line EqualityOperator: -0n is 0n
  const magnitude = numerator < 0n ? -numerator : numerator;
  let quotient = magnitude / denominator;
  if ((magnitude % denominator) * 2n >= denominator) quotient += 1n;
  // Stryker disable next-line EqualityOperator: -0n is 0n
  const result = Number(numerator < 0n ? -quotient : quotient);
  if (!Number.isSafeInteger(result)) throw new RangeError(`${numerator}/${denominator} is out of range`);
  return result;
}

const rateSchema = z.union([z.string(), z.number()]).transform((value, ctx) => {
  const micro = parseScaledDecimal(String(value), 6);
  if (micro === null || micro <= 0n) {
    ctx.addIssue({
      code: 'custom',
      message: `expected a positive decimal with at most 6 decimals, got ${value}`,
    });
    return z.NEVER;
  }
  return micro;
});

const usdPerSchema = z.strictObject({ USD: rateSchema, EUR: rateSchema, GBP: rateSchema });

// The shipped file wraps the rates in `usdPer`; a bare rates object is accepted too.
const ratesFileSchema = z.union([
  z.strictObject({ usdPer: usdPerSchema }).transform((file) => file.usdPer),
  usdPerSchema,
]);

/**
 * Parses currency rates (`{ "usdPer": { "USD": "1.00", ... } }`, strings or numbers) into exact micro-dollar
 * units; defaults to the shipped currency-rates.json. Throws a ZodError naming every bad rate.
 */
export function loadUsdPer(json: unknown = readShippedJson('currency-rates.json')): UsdPer {
  return ratesFileSchema.parse(json);
}

/** target = round(cents × usdPer[from] / usdPer[to]), half away from zero (docs/api.md#marketplaces-and-money). */
export function convertCents(cents: number, from: Currency, to: Currency, usdPer: UsdPer): number {
  assertSafeInteger(cents, 'cents');
  // Stryker disable next-line ConditionalExpression: a shortcut, cents × r / r is cents exactly
  if (from === to) return cents;
  return divRoundHalfAway(BigInt(cents) * usdPer[from], usdPer[to]);
}

function readShippedJson(fileName: string): unknown {
  return JSON.parse(readFileSync(new URL(`./${fileName}`, import.meta.url), 'utf8'));
}

function assertSafeInteger(value: number, name: string): void {
  if (!Number.isSafeInteger(value)) throw new RangeError(`${name} must be a safe integer, got ${value}`);
}
