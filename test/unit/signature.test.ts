import { describe, expect, it } from 'vitest';
import type { OrderRequest } from '../../client/src/index.js';
import { canonicalQuery, sha256Hex, sign, stringToSign } from '../../src/auth/signature.js';
import { createSigningClient, searchQuery } from '../helpers/signed-client.js';

const DATE = '2026-11-21T10:00:00.123Z';
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

describe('canonical query', () => {
  it('is empty when there is no query', () => {
    expect(canonicalQuery('')).toBe('');
  });

  it('reads + and %20 both as a space and writes %20', () => {
    expect(canonicalQuery('referenceId=a+b')).toBe('referenceId=a%20b');
    expect(canonicalQuery('referenceId=a%20b')).toBe('referenceId=a%20b');
  });

  it('keeps one pair per value of a repeated parameter, values sorted', () => {
    expect(canonicalQuery('orderId=2&orderId=1&orderId=2')).toBe('orderId=1&orderId=2&orderId=2');
  });

  it('sorts by name, then by value, in byte order of the encoded forms', () => {
    expect(canonicalQuery('b=1&a=2&a=10')).toBe('a=10&a=2&b=1');
    expect(canonicalQuery('a=2&a=1')).toBe('a=1&a=2');
    expect(canonicalQuery('a=1&b=2&b=1')).toBe('a=1&b=1&b=2'); // names already in order, values not
    expect(canonicalQuery('ab=4&a_b=3&aB=2&a-b=1')).toBe('a-b=1&aB=2&a_b=3&ab=4');
    expect(canonicalQuery('limit=5&dateStart=2026-01-01T00%3A00%3A00Z')).toBe(
      'dateStart=2026-01-01T00%3A00%3A00Z&limit=5',
    );
  });

  it('encodes every reserved character and keeps only A-Z a-z 0-9 - _ . ~', () => {
    expect(canonicalQuery("q=a/b:c@d!'()*,;$")).toBe('q=a%2Fb%3Ac%40d%21%27%28%29%2A%2C%3B%24');
    expect(canonicalQuery('q=a%2fb%3d')).toBe('q=a%2Fb%3D');
    expect(canonicalQuery('q=AZaz09-_.~')).toBe('q=AZaz09-_.~');
    expect(canonicalQuery('a=b=c')).toBe('a=b%3Dc');
  });

  it('encodes UTF-8 bytes, whether the client sent them escaped or not', () => {
    expect(canonicalQuery('title=caf%C3%A9')).toBe('title=caf%C3%A9');
    expect(canonicalQuery('title=café')).toBe('title=caf%C3%A9');
    expect(canonicalQuery('price=%E2%82%AC5')).toBe('price=%E2%82%AC5');
  });

  it('keeps a bad percent escape literally, and decodes the good ones around it', () => {
    expect(canonicalQuery('pct=100%')).toBe('pct=100%25');
    expect(canonicalQuery('price=%E2%82')).toBe('price=%25E2%2582'); // a cut-off UTF-8 sequence
    expect(canonicalQuery('q=caf%C3%A9+%E2%82%zz')).toBe('q=caf%C3%A9%20%25E2%2582%25zz');
  });

  it('treats a name without = as an empty value and skips empty parts', () => {
    expect(canonicalQuery('flag&&x=')).toBe('flag=&x=');
  });
});

describe('string to sign', () => {
  it('is the seven lines of docs/api.md#signing', () => {
    const text = stringToSign({
      method: 'get',
      path: '/v1/orders/42',
      rawQuery: 'b=2&a=1',
      date: DATE,
      requestId: 'req-1',
      body: undefined,
    });
    expect(text.split('\n')).toEqual([
      'SVC1-HMAC-SHA256',
      'GET',
      '/v1/orders/42',
      'a=1&b=2',
      DATE,
      'req-1',
      EMPTY_SHA256,
    ]);
  });

  it('hashes the raw body bytes', () => {
    expect(sha256Hex('{"dryrun":true}')).toBe(
      '27cf361dab71c1bf86a2434df1c584424d3dd057c20072df75fda276ba8fcc85',
    );
    expect(sha256Hex(Buffer.from('{"dryrun":true}'))).toBe(sha256Hex('{"dryrun":true}'));
  });
});

describe('signature', () => {
  // Vectors computed independently with `printf '...' | openssl dgst -sha256 -hmac sk_test_vector`.
  it('matches a POST computed with openssl', () => {
    const signature = sign('sk_test_vector', {
      method: 'POST',
      path: '/v1/orders',
      rawQuery: '',
      date: DATE,
      requestId: '0f8fad5b-d9cb-469f-a165-70867728950e',
      body: '{"dryrun":true}',
    });
    expect(signature).toBe('88a7f72b28df97ea1a80e3da3de4693e76ead788d3d132bb3ea6b4596e9985ac');
  });

  it('matches a GET with a query computed with openssl', () => {
    const signature = sign('sk_test_vector', {
      method: 'GET',
      path: '/v1/orders',
      rawQuery: 'referenceId=a+b&orderId=2&orderId=1',
      date: DATE,
      requestId: 'req-1',
      body: undefined,
    });
    expect(signature).toBe('1495d5c6dc2e972d9f89a0507c83fee93c595363cfd9c58aeac5895cea1b95f3');
  });
});

interface Captured {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

/** A fetch that records the request and answers like the service would. */
function recordingFetch(captured: Captured[], status = 200) {
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const body = init?.body ? Buffer.from(init.body as Uint8Array) : undefined;
    captured.push({
      url: new URL(String(input)),
      method: init?.method ?? 'GET',
      headers: init?.headers as Record<string, string>,
      body,
    });
    return new Response(JSON.stringify({ orderId: 7 }), {
      status,
      headers: { 'content-type': 'application/json; charset=utf-8', 'svc-status': '4010, 4017' },
    });
  };
}

function verifies(request: Captured, secretKey: string): boolean {
  const expected = sign(secretKey, {
    method: request.method,
    path: request.url.pathname,
    rawQuery: request.url.search.slice(1),
    date: request.headers['svc-date']!,
    requestId: request.headers['svc-requestid']!,
    body: request.body,
  });
  return expected === request.headers['svc-signature'];
}

const address = {
  name: 'Ada Lovelace',
  address1: '12 St James Square',
  city: 'London',
  country: 'GBR',
  zipcode: 'SW1Y 4JH',
  phone: '+44 20 7946 0000',
};

const order: OrderRequest = {
  shipAddr: address,
  billAddr: address,
  ccToken: 'cc_1',
  listings: [{ listingId: 1001, quantity: 1 }],
  shippingMode: 'S',
  domain: 'bookmarket.co.uk',
  dryrun: true,
};

describe('signing client', () => {
  const setup = (baseUrl = 'http://127.0.0.1:3000') => {
    const captured: Captured[] = [];
    const client = createSigningClient({
      baseUrl,
      accessKey: 'AK1',
      secretKey: 'sk_1',
      fetch: recordingFetch(captured) as typeof fetch,
    });
    return { captured, client };
  };

  it('sends the four Svc- headers with a fresh UUID, the current date and a signature the server accepts', async () => {
    const { captured, client } = setup();
    const before = Date.now();
    const response = await client.placeOrder(order);
    const [request] = captured;
    expect(request?.headers).toMatchObject({ 'svc-access-key': 'AK1', 'content-type': 'application/json' });
    expect(request?.headers['svc-requestid']).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    );
    expect(Date.parse(request!.headers['svc-date']!)).toBeGreaterThanOrEqual(before - 1);
    expect(request?.headers['svc-date']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(request?.body?.toString()).toBe(JSON.stringify(order));
    expect(verifies(request!, 'sk_1')).toBe(true);
    expect(response).toMatchObject({ status: 200, ok: true, svcStatus: [4010, 4017], body: { orderId: 7 } });
    expect(response.requestId).toBe(request?.headers['svc-requestid']);
  });

  it('uses the request id given, sends raw bytes as they are and asks for an async answer', async () => {
    const { captured, client } = setup();
    await client.request('post', '/v1/orders', '{ "not":  "reformatted" }', { requestId: 'mine-1' });
    await client.placeOrder(order, { requestId: 'mine-2', respondAsync: true });
    expect(captured[0]?.headers['svc-requestid']).toBe('mine-1');
    expect(captured[0]?.body?.toString()).toBe('{ "not":  "reformatted" }');
    expect(captured[1]?.headers['prefer']).toBe('respond-async');
    expect(captured.every((request) => verifies(request, 'sk_1'))).toBe(true);
  });

  it('sends repeated parameters for arrays in a search and signs the query as sent', async () => {
    const { captured, client } = setup('http://127.0.0.1:3000/v1/');
    await client.searchOrders({ orderId: [3, 1], referenceId: 'a b', limit: 5, next: undefined });
    const request = captured[0]!;
    expect(request.url.pathname).toBe('/v1/orders');
    expect(request.url.search).toBe('?orderId=3&orderId=1&referenceId=a+b&limit=5');
    expect(request.body).toBeUndefined();
    expect(verifies(request, 'sk_1')).toBe(true);
  });

  it('gets one order by id', async () => {
    const { captured, client } = setup();
    await client.getOrder(42);
    expect(captured[0]?.url.pathname).toBe('/v1/orders/42');
    expect(verifies(captured[0]!, 'sk_1')).toBe(true);
  });

  it('builds an empty query from no parameters', () => {
    expect(searchQuery({})).toBe('');
  });
});
