import { describe, expect, it } from 'vitest';
import { inline } from '../../src/store/postgres/postgres.pool.js';

describe('inline (a statement with its parameters written in, to travel with BEGIN or COMMIT)', () => {
  it('when given numbers, booleans, nulls and arrays of numbers, then each becomes its literal', () => {
    expect(
      inline({
        text: 'SELECT f($1::bigint, $2::boolean, $3::text, $4::bigint[], $10::int, $11::int[])',
        values: [12, true, null, [3, null, -4], 0, 0, 0, 0, 0, -7, []],
      }),
    ).toBe(
      `SELECT f('12'::bigint, TRUE::boolean, NULL::text, '{3,NULL,-4}'::bigint[], '-7'::int, '{}'::int[])`,
    );
  });

  it('when a string holds quotes and backslashes, then it is quoted as a literal, not code', () => {
    // node-postgres' escapeLiteral: quotes doubled, and E'' (after a space) with backslashes doubled.
    const text = inline({ text: 'SELECT $1::text', values: [`a'; DROP TABLE orders; --\\`] });
    expect(text).toBe(`SELECT  E'a''; DROP TABLE orders; --\\\\'::text`);
  });

  it('when the same text comes again with other values, or names one placeholder twice, then each call writes its own', () => {
    const text = 'SELECT f($2::int, $1::int, $2::int)';
    expect(inline({ text, values: [1, 2] })).toBe(`SELECT f('2'::int, '1'::int, '2'::int)`);
    expect(inline({ text, values: [3, 4] })).toBe(`SELECT f('4'::int, '3'::int, '4'::int)`);
    expect(inline({ text: 'SELECT 1', values: [] })).toBe('SELECT 1');
  });

  it('when a value is not one it knows how to write, or is missing, then it refuses', () => {
    expect(() => inline({ text: 'SELECT $1', values: [{ a: 1 }] })).toThrow(/cannot inline/);
    expect(() => inline({ text: 'SELECT $1', values: [['x']] })).toThrow(/cannot inline/);
    expect(() => inline({ text: 'SELECT $1', values: [Number.NaN] })).toThrow(/cannot inline/);
    expect(() => inline({ text: 'SELECT $2', values: [1] })).toThrow(/no value for \$2/);
  });
});
