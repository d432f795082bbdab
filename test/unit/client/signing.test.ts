// The package signs exactly as the service verifies (docs/api.md#signing): same string to sign, same signature.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalQuery, sha256Hex, signRequest, stringToSign } from '../../../client/src/index.js';
import * as service from '../../../src/auth/signature.js';

describe('the client package signing a request', () => {
  it('gives the signature of a known request', () => {
    const request = {
      method: 'post',
      path: '/v1/orders',
      rawQuery: '',
      date: '2026-11-21T10:00:00.000Z',
      requestId: 'r-1',
      bodySha256: sha256Hex('{"a":1}'),
    };
    expect(stringToSign(request)).toBe(
      [
        'SVC1-HMAC-SHA256',
        'POST',
        '/v1/orders',
        '',
        '2026-11-21T10:00:00.000Z',
        'r-1',
        '015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862',
      ].join('\n'),
    );
    expect(signRequest('secret', request)).toBe(
      service.sign('secret', { ...request, body: '{"a":1}', bodySha256: undefined }),
    );
  });

  it('sorts, decodes and encodes the query as the service does', () => {
    expect(canonicalQuery('limit=5&orderId=2&orderId=10&dateStart=2026-11-01T00%3A00%3A00Z')).toBe(
      'dateStart=2026-11-01T00%3A00%3A00Z&limit=5&orderId=10&orderId=2',
    );
    expect(canonicalQuery('a=b+c&x=%7e*')).toBe('a=b%20c&x=~%2A');
  });

  it('agrees with the service for any method, path, query, date, request id, body and key', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('GET', 'POST', 'get'),
        fc.webPath(),
        fc.string(),
        fc.string(),
        fc.string(),
        fc.string({ unit: 'binary' }),
        fc.string({ minLength: 1 }),
        (method, path, rawQuery, date, requestId, body, key) => {
          const parts = { method, path, rawQuery, date, requestId };
          expect(signRequest(key, { ...parts, bodySha256: sha256Hex(body) })).toBe(
            service.sign(key, { ...parts, body }),
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});
