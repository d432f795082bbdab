import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/domain/canonical-json.js';

describe('canonicalJson, the text a batch entry is hashed by', () => {
  it('sorts the keys of every object and keeps arrays in order', () => {
    const value = { b: 1, a: { d: [1, { z: null, y: 'x"y' }], c: true }, e: [] };
    expect(canonicalJson(value)).toBe('{"a":{"c":true,"d":[1,{"y":"x\\"y","z":null}]},"b":1,"e":[]}');
  });

  it('gives the same text for the same content sent with other key order and spacing', () => {
    const sent = JSON.parse('{ "listings": [ {"quantity": 1, "listingId": 7} ], "domain": "x.com" }');
    const again = JSON.parse('{"domain":"x.com","listings":[{"listingId":7,"quantity":1.0}]}');
    expect(canonicalJson(again)).toBe(canonicalJson(sent));
    expect(canonicalJson({ ...sent, domain: 'y.com' })).not.toBe(canonicalJson(sent));
  });
});
