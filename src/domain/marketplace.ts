import type { Currency } from './money.js';

/** The seven domains of docs/api.md#marketplaces-and-money and their currencies, for the configured marketplace names. */
export function marketplaceDomains(names: readonly [string, string, string]): ReadonlyMap<string, Currency> {
  const [m1, m2, m3] = names;
  return new Map<string, Currency>([
    [`${m1}.com`, 'USD'],
    [`${m1}.co.uk`, 'GBP'],
    [`${m1}.de`, 'EUR'],
    [`${m1}.fr`, 'EUR'],
    [`${m1}.it`, 'EUR'],
    [`${m2}.com`, 'EUR'],
    [`${m3}.com`, 'EUR'],
  ]);
}
