import { describe, expect, it } from 'vitest';
import { parseCatalog } from '../../src/domain/catalog.schema.js';
import { isStorableText, unstorableTextPaths } from '../../src/domain/storable-text.js';

describe('storable text', () => {
  it('refuses U+0000 and unpaired surrogates, and holds every other code point', () => {
    for (const bad of [
      '\u0000',
      'a\u0000',
      '\ud800',
      'a\ud800b',
      '\udc00',
      'x\udfff',
      '\ud83d',
      '\ude00\ud83d',
    ])
      expect(isStorableText(bad), JSON.stringify(bad)).toBe(false);
    for (const good of [
      '',
      'Ada',
      '\ud83d\ude00',
      '\u{10ffff}',
      '\ufffe\uffff',
      '\u0001\u001f\u007f\u0085',
      'é😀',
    ])
      expect(isStorableText(good), JSON.stringify(good)).toBe(true);
  });

  it('names the path of every string holding such text, keys aside, at most as many as asked', () => {
    const value = { a: 'ok', b: ['x', 'y\u0000', { c: '\ud800' }], 'd\u0000': 1, e: null, f: 2 };
    expect(unstorableTextPaths(value)).toEqual([
      ['b', 1],
      ['b', 2, 'c'],
    ]);
    expect(unstorableTextPaths(Array(100).fill('\u0000'), 3)).toEqual([[0], [1], [2]]);
    expect(unstorableTextPaths('\u0000')).toEqual([[]]);
  });

  it('refuses a catalog file holding it, naming the field', () => {
    const parsed = parseCatalog({
      listings: [{ listingId: 1, vendorId: 1, title: 'Mid\u0000dle', isbn: '1', price: 1, quantity: 1 }],
      vendors: [],
    });
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? [] : parsed.problems).toContain(
      'listings[0].title: must not hold U+0000 or an unpaired UTF-16 surrogate',
    );
  });
});
