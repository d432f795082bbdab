import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { divRoundHalfAway, parseScaledDecimal } from './money.js';

/** A tax model and its rate in basis points (7.25 % -> 725; 6.875 % -> 687.5). */
export interface TaxRule {
  model: string;
  basisPoints: number;
}

export interface TaxRules {
  byCountry: Record<string, { model: string; rate?: number; byProvstate?: Record<string, number> }>;
}

// Percent rates carry at most four decimals, so basis points carry at most two (MN 6.875 % -> 687.5).
const percentSchema = z
  .number()
  .min(0)
  .max(100)
  .refine((rate) => parseScaledDecimal(String(rate), 4) !== null, 'a rate has at most four decimals');

const countryRuleSchema = z
  .strictObject({
    model: z.string().min(1),
    rate: percentSchema.optional(),
    byProvstate: z.record(z.string().regex(/^[A-Z0-9]{2,3}$/), percentSchema).optional(),
  })
  .refine((rule) => rule.rate !== undefined || rule.byProvstate !== undefined, 'needs rate or byProvstate');

const taxRulesSchema = z.strictObject({
  byCountry: z.record(z.string().regex(/^[A-Z]{3}$/), countryRuleSchema),
});

/** Parses tax rules (percent rates), failing fast on any bad entry; defaults to the shipped tax-rules.json. */
export function loadTaxRules(json: unknown = readShippedRules()): TaxRules {
  return taxRulesSchema.parse(json);
}

/**
 * The rule for a shipping address: the provstate's rate when the country has one for it, else the country's
 * own rate; null when neither applies (USA without provstate or with an unknown one, any other country).
 */
export function taxRuleFor(
  rules: TaxRules,
  country: string,
  provstate: string | null | undefined,
): TaxRule | null {
  const entry = ownValue(rules.byCountry, country);
  if (entry === undefined) return null;
  const byProvstate = entry.byProvstate && provstate ? ownValue(entry.byProvstate, provstate) : undefined;
  const rate = byProvstate ?? entry.rate;
  if (rate === undefined) return null;
  return { model: entry.model, basisPoints: toBasisPoints(rate) };
}

/** One rounding, half away from zero: round(subtotalCents × basisPoints / 10000). */
export function taxCents(subtotalCents: number, rule: TaxRule): number {
  if (!Number.isSafeInteger(subtotalCents)) throw new RangeError(`subtotal must be integer cents`);
  const hundredthsOfBasisPoints = parseScaledDecimal(String(rule.basisPoints), 2);
  if (hundredthsOfBasisPoints === null || hundredthsOfBasisPoints < 0n) {
    throw new RangeError(
      `basisPoints must be non-negative with at most two decimals, got ${rule.basisPoints}`,
    );
  }
  return divRoundHalfAway(BigInt(subtotalCents) * hundredthsOfBasisPoints, 1_000_000n);
}

function toBasisPoints(percent: number): number {
  // Exact: 6.875 -> 68750n hundredths of a basis point -> 687.5.
  return Number(parseScaledDecimal(String(percent), 4)) / 100;
}

// Own keys only, so a provstate such as "constructor" never finds Object.prototype.
function ownValue<T>(record: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

function readShippedRules(): unknown {
  return JSON.parse(readFileSync(new URL('./tax-rules.json', import.meta.url), 'utf8'));
}
