import { describe, it, expect } from 'vitest';
import { loadTaxRules, taxCents, taxRuleFor, type TaxRules } from '../../src/domain/tax.js';

const rules = loadTaxRules();

describe('loadTaxRules', () => {
  it('ships a SALES_TAX rate for all 50 states and DC', () => {
    const usa = rules.byCountry.USA;
    expect(usa?.model).toBe('SALES_TAX');
    expect(Object.keys(usa?.byProvstate ?? {})).toHaveLength(51);
    expect(usa?.byProvstate).toMatchObject({ AK: 0, DE: 0, MT: 0, NH: 0, OR: 0, FL: 6, IL: 6.25, PA: 6 });
  });

  it('ships the reduced VAT book rates', () => {
    expect(rules.byCountry).toMatchObject({
      GBR: { model: 'VAT', rate: 0 },
      DEU: { model: 'VAT', rate: 7 },
      FRA: { model: 'VAT', rate: 5.5 },
      ITA: { model: 'VAT', rate: 4 },
      ESP: { model: 'VAT', rate: 4 },
    });
  });

  it('fails fast on a bad rules file', () => {
    const withRate = (rate: unknown) => ({ byCountry: { DEU: { model: 'VAT', rate } } });
    expect(() => loadTaxRules(withRate(-1))).toThrow();
    expect(() => loadTaxRules(withRate(101))).toThrow();
    expect(() => loadTaxRules(withRate('7'))).toThrow();
    expect(() => loadTaxRules(withRate(7.12345))).toThrow(); // five decimals of a percent
    expect(() => loadTaxRules({ byCountry: { DEU: { model: 'VAT' } } })).toThrow();
    expect(() => loadTaxRules({ byCountry: { DEU: { rate: 7 } } })).toThrow();
    expect(() => loadTaxRules({ byCountry: { de: { model: 'VAT', rate: 7 } } })).toThrow();
    expect(() => loadTaxRules({})).toThrow();
  });

  it('says what is wrong with a bad rule', () => {
    const deu = (rule: object) => ({ byCountry: { DEU: { model: 'VAT', ...rule } } });
    expect(() => loadTaxRules(deu({ rate: 7.12345 }))).toThrow(/a rate has at most four decimals/);
    expect(() => loadTaxRules(deu({}))).toThrow(/needs rate or byProvstate/);
  });

  it('accepts only whole three-letter country codes and two- or three-character provstates', () => {
    const country = (code: string) => ({ byCountry: { [code]: { model: 'VAT', rate: 7 } } });
    expect(loadTaxRules(country('DEU')).byCountry.DEU?.rate).toBe(7);
    for (const code of ['USAX', 'XUSA', 'xUSA', 'USAx', 'US']) {
      expect(() => loadTaxRules(country(code)), code).toThrow();
    }
    const provstate = (code: string) => ({
      byCountry: { USA: { model: 'SALES_TAX', byProvstate: { [code]: 6 } } },
    });
    expect(loadTaxRules(provstate('CA')).byCountry.USA?.byProvstate).toEqual({ CA: 6 });
    expect(loadTaxRules(provstate('QC1')).byCountry.USA?.byProvstate).toEqual({ QC1: 6 });
    for (const code of ['CALI', 'xCA', 'CAx', 'C']) {
      expect(() => loadTaxRules(provstate(code)), code).toThrow();
    }
  });
});

describe('taxRuleFor', () => {
  it('finds a US state base rate by provstate', () => {
    expect(taxRuleFor(rules, 'USA', 'CA')).toEqual({ model: 'SALES_TAX', basisPoints: 725 });
    expect(taxRuleFor(rules, 'USA', 'TX')).toEqual({ model: 'SALES_TAX', basisPoints: 625 });
    expect(taxRuleFor(rules, 'USA', 'NY')).toEqual({ model: 'SALES_TAX', basisPoints: 400 });
    expect(taxRuleFor(rules, 'USA', 'WA')).toEqual({ model: 'SALES_TAX', basisPoints: 650 });
    expect(taxRuleFor(rules, 'USA', 'OR')).toEqual({ model: 'SALES_TAX', basisPoints: 0 });
    expect(taxRuleFor(rules, 'USA', 'MN')).toEqual({ model: 'SALES_TAX', basisPoints: 687.5 }); // 6.875 %
  });

  it('has no rule for the USA without a known provstate', () => {
    expect(taxRuleFor(rules, 'USA', null)).toBeNull();
    expect(taxRuleFor(rules, 'USA', undefined)).toBeNull();
    expect(taxRuleFor(rules, 'USA', 'ZZ')).toBeNull();
    expect(taxRuleFor(rules, 'USA', 'constructor')).toBeNull(); // not Object.prototype's
  });

  it('finds the VAT rate of a European country, whatever the provstate', () => {
    expect(taxRuleFor(rules, 'DEU', null)).toEqual({ model: 'VAT', basisPoints: 700 });
    expect(taxRuleFor(rules, 'GBR', 'XX')).toEqual({ model: 'VAT', basisPoints: 0 });
    expect(taxRuleFor(rules, 'FRA', undefined)).toEqual({ model: 'VAT', basisPoints: 550 });
    expect(taxRuleFor(rules, 'ITA', null)).toEqual({ model: 'VAT', basisPoints: 400 });
    expect(taxRuleFor(rules, 'ESP', null)).toEqual({ model: 'VAT', basisPoints: 400 });
  });

  it('has no rule for any other country', () => {
    expect(taxRuleFor(rules, 'JPN', null)).toBeNull();
    expect(taxRuleFor(rules, 'CAN', 'ON')).toBeNull();
    expect(taxRuleFor(rules, 'toString', null)).toBeNull();
  });

  it('falls back to the country rate when a provstate has none of its own', () => {
    const mixed: TaxRules = { byCountry: { CAN: { model: 'GST', rate: 5, byProvstate: { ON: 13 } } } };
    expect(taxRuleFor(mixed, 'CAN', 'ON')).toEqual({ model: 'GST', basisPoints: 1300 });
    expect(taxRuleFor(mixed, 'CAN', 'AB')).toEqual({ model: 'GST', basisPoints: 500 });
    expect(taxRuleFor(mixed, 'CAN', null)).toEqual({ model: 'GST', basisPoints: 500 });
  });
});

describe('taxCents', () => {
  const rule = (basisPoints: number) => ({ model: 'SALES_TAX', basisPoints });

  it('rounds once, to the nearest cent', () => {
    expect(taxCents(10000, rule(725))).toBe(725); // 100.00 at 7.25 %
    expect(taxCents(1999, rule(725))).toBe(145); // 144.9275
    expect(taxCents(4596, rule(725))).toBe(333); // 333.21
    expect(taxCents(1, rule(725))).toBe(0); // 0.0725
    expect(taxCents(0, rule(725))).toBe(0);
    expect(taxCents(123456, rule(0))).toBe(0);
  });

  it('rounds exact half cents away from zero', () => {
    expect(taxCents(200, rule(725))).toBe(15); // 14.5
    expect(taxCents(200, rule(625))).toBe(13); // 12.5
    expect(taxCents(-200, rule(725))).toBe(-15); // -14.5
    expect(taxCents(1400, rule(625))).toBe(88); // 87.5
  });

  it('handles fractional basis points exactly', () => {
    expect(taxCents(10000, rule(662.5))).toBe(663); // NJ 6.625 %: 662.5
    expect(taxCents(10000, rule(687.5))).toBe(688); // MN 6.875 %: 687.5
    expect(taxCents(1000, rule(422.5))).toBe(42); // MO 4.225 %: 42.25
  });

  it('refuses bad input', () => {
    expect(() => taxCents(10.5, rule(725))).toThrow(new RangeError('subtotal must be integer cents'));
    const badRule = 'basisPoints must be non-negative with at most two decimals, got';
    expect(() => taxCents(100, rule(-1))).toThrow(new RangeError(`${badRule} -1`));
    expect(() => taxCents(100, rule(7.255))).toThrow(new RangeError(`${badRule} 7.255`));
  });
});
