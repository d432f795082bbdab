// Which failures the client retries, how long it waits, and that a retry is the same request: same
// Svc-RequestId and body, signed again with a fresh Svc-Date.
import { describe, expect, it } from 'vitest';
import {
  isRetryable,
  OrderApiError,
  OrdersClient,
  retryAfterMs,
  retryDelayMs,
  sha256Hex,
  signRequest,
} from '../../../client/src/index.js';

describe('isRetryable', () => {
  it.each([
    [0, [], true],
    [500, [5000], true],
    [502, [], true],
    [503, [5030], true],
    [429, [4291], true],
    [429, [4292], false],
    [429, [4293], false],
    [400, [4000, 4002], false],
    [401, [4010, 4017], false],
    [404, [4041], false],
    [409, [4090], false],
    [413, [4130], false],
    [422, [4220], false],
    [408, [4080], false],
  ])('HTTP %i with %j: %s', (httpStatus, svcStatus, expected) => {
    expect(isRetryable({ httpStatus, svcStatus })).toBe(expected);
  });
});

describe('retryDelayMs', () => {
  it('waits what Retry-After says, in seconds or as an HTTP date', () => {
    expect(retryDelayMs(0, '3')).toBe(3000);
    expect(retryDelayMs(5, '0')).toBe(0);
    const now = () => Date.parse('2026-11-21T10:00:00Z');
    expect(retryAfterMs('Sat, 21 Nov 2026 10:00:07 GMT', now)).toBe(7000);
    expect(retryAfterMs('soon')).toBeUndefined();
  });

  it('reads a negative or malformed Retry-After as absent (backing off), one too large to count as Infinity', () => {
    const high = { random: () => 1 };
    for (const absurd of ['-5', '-1', 'NaN', '1e9', '2 s', 'Infinity'])
      expect(retryDelayMs(0, absurd, high), absurd).toBe(200);
    expect(retryAfterMs('9'.repeat(400))).toBe(Infinity);
    expect(retryAfterMs('99999999999')).toBe(99_999_999_999_000);
  });

  it('else backs off exponentially, with jitter between half and all of the step, capped', () => {
    const low = { random: () => 0 };
    const high = { random: () => 1 };
    expect([0, 1, 2, 3].map((a) => retryDelayMs(a, null, high))).toEqual([200, 400, 800, 1600]);
    expect([0, 1, 2, 3].map((a) => retryDelayMs(a, null, low))).toEqual([100, 200, 400, 800]);
    expect(retryDelayMs(20, undefined, high)).toBe(10_000);
  });
});

interface Sent {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
}

/** A fetch that records each request and answers from the list (a thrown Error is a lost answer). */
function scripted(answers: (Response | Error)[]) {
  const sent: Sent[] = [];
  const fetch = (async (url: URL, init: RequestInit) => {
    sent.push({
      url: String(url),
      method: init.method!,
      headers: init.headers as Record<string, string>,
      body: init.body as string | undefined,
    });
    const next = answers.shift();
    if (!next) throw new Error('no answer scripted');
    if (next instanceof Error) throw next;
    return next;
  }) as unknown as typeof globalThis.fetch;
  return { sent, fetch };
}

const json = (status: number, svcStatus: string, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', 'svc-status': svcStatus, ...headers },
  });

const ORDER = { orderId: 7, listings: [] };
const REQUEST = {
  shipAddr: { name: 'a', address1: 'b', city: 'c', country: 'USA', zipcode: '1', phone: '2' },
  billAddr: { name: 'a', address1: 'b', city: 'c', country: 'USA', zipcode: '1', phone: '2' },
  ccToken: 'tok',
  listings: [{ listingId: 1, quantity: 1 }],
  shippingMode: 'S' as const,
  domain: 'bookmarket.com' as const,
};

const options = { baseUrl: 'http://orders.test/v1', accessKey: 'AK1', secretKey: 'SK1' };

function expectSignedFor(sent: Sent) {
  const url = new URL(sent.url);
  expect(sent.headers['svc-signature']).toBe(
    signRequest('SK1', {
      method: sent.method,
      path: url.pathname,
      rawQuery: url.search.slice(1),
      date: sent.headers['svc-date']!,
      requestId: sent.headers['svc-requestid']!,
      bodySha256: sha256Hex(sent.body ?? ''),
    }),
  );
}

describe('OrdersClient retrying', () => {
  it('sends a lost or refused-for-now order again with the same request id and body, re-signed with a new date', async () => {
    const { sent, fetch } = scripted([
      json(503, '5030', { requestId: 'r', messages: ['too many orders'] }, { 'retry-after': '0' }),
      new TypeError('fetch failed'),
      json(429, '4291', { requestId: 'r', messages: ['slow down'] }, { 'retry-after': '0' }),
      json(200, '2010', ORDER),
    ]);
    const client = new OrdersClient({ ...options, fetch });
    await expect(client.placeOrder(REQUEST, { requestId: 'order-42' })).resolves.toEqual(ORDER);
    expect(sent).toHaveLength(4);
    for (const request of sent) {
      expect(request.url).toBe('http://orders.test/v1/orders');
      expect(request.headers['svc-requestid']).toBe('order-42');
      expect(request.body).toBe(JSON.stringify(REQUEST));
      expectSignedFor(request);
    }
    const dates = sent.map((s) => Date.parse(s.headers['svc-date']!));
    // The network error waits 100–200 ms: the attempt after it carries a later date.
    expect(dates[2]!).toBeGreaterThan(dates[1]!);
    expect(dates).toEqual([...dates].sort((a, b) => a - b));
  });

  it('never retries another 4xx, and rejects with what the service said', async () => {
    const { sent, fetch } = scripted([
      json(400, '4000, 4002', { requestId: 'r1', messages: ['listings: at least one listing'] }),
    ]);
    const client = new OrdersClient({ ...options, fetch });
    const error = await client.placeOrder(REQUEST, { requestId: 'r1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OrderApiError);
    expect(error).toMatchObject({
      httpStatus: 400,
      svcStatus: [4000, 4002],
      messages: ['listings: at least one listing'],
      requestId: 'r1',
      retryable: false,
    });
    expect(sent).toHaveLength(1);
  });

  it('gives up after maxRetries, rejecting as retryable', async () => {
    const answers = Array.from({ length: 5 }, () =>
      json(503, '5030', { requestId: 'x', messages: ['down'] }, { 'retry-after': '0' }),
    );
    const { sent, fetch } = scripted(answers);
    const client = new OrdersClient({ ...options, fetch, maxRetries: 2 });
    await expect(client.getOrder(7)).rejects.toMatchObject({
      httpStatus: 503,
      svcStatus: [5030],
      retryable: true,
    });
    expect(sent).toHaveLength(3);
    expect(new Set(sent.map((s) => s.headers['svc-requestid'])).size).toBe(1);
  });

  it.each([
    ['past the 24.8 days a timer holds', '99999999999'],
    ['too many seconds to count', '9'.repeat(400)],
    ['just past the 300 s it waits', '301'],
  ])('does not retry at once when Retry-After is %s: the caller gets the refusal', async (_, retryAfter) => {
    const { sent, fetch } = scripted([
      json(503, '5030', { requestId: 'x', messages: ['busy'] }, { 'retry-after': retryAfter }),
      json(200, '2010', ORDER),
    ]);
    const client = new OrdersClient({ ...options, fetch });
    const error = await client.placeOrder(REQUEST).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OrderApiError);
    expect(error).toMatchObject({ httpStatus: 503, svcStatus: [5030], retryable: true });
    expect((error as OrderApiError).messages).toEqual([
      'busy',
      'Retry-After asks for more than this client waits (300000 ms): not retried',
    ]);
    expect(sent).toHaveLength(1);
  });

  it('waits a Retry-After up to maxRetryAfterMs, and in placeOrders keeps the refusal past it', async () => {
    const refused = { requestId: 'a', status: [5030], order: null, messages: ['busy'] };
    const { sent, fetch } = scripted([
      json(200, '2004', { results: [refused] }, { 'retry-after': '1' }),
      json(503, '5030', { messages: ['busy'] }, { 'retry-after': '1' }),
      json(200, '2010', ORDER),
    ]);
    const client = new OrdersClient({ ...options, fetch, maxRetryAfterMs: 500 });
    const results = await client.placeOrders([{ requestId: 'a', ...REQUEST }]);
    expect(results).toEqual([{ requestId: 'a', svcStatus: [5030], order: null, messages: ['busy'] }]);
    expect(sent).toHaveLength(1);
    const patient = new OrdersClient({ ...options, fetch, maxRetryAfterMs: 1000 });
    await expect(patient.getOrder(7)).resolves.toEqual(ORDER);
    expect(sent).toHaveLength(3);
  });

  it('ends waitForOrder past its time-out in an OrderApiError, not a DOMException', async () => {
    const queued = { orderId: 7, listings: [{ orderItems: [{ status: 1 }] }] };
    const fetch = (async () => json(200, '2000', queued)) as unknown as typeof globalThis.fetch;
    const client = new OrdersClient({ ...options, fetch });
    const error = await client.waitForOrder(7, { timeoutMs: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OrderApiError);
    expect(error).toMatchObject({
      httpStatus: 0,
      retryable: true,
      messages: [expect.stringMatching(/QUEUED/)],
    });
    const caller = new AbortController();
    const aborted = client.waitForOrder(7, { signal: caller.signal }).catch((e: unknown) => e);
    caller.abort(new Error('mine'));
    await expect(aborted).resolves.toMatchObject({ message: 'mine' });
  });

  it('with maxRetries 3 by default: a lost answer four times is an OrderApiError with HTTP status 0', async () => {
    const { sent, fetch } = scripted(Array.from({ length: 4 }, () => new TypeError('fetch failed')));
    const client = new OrdersClient({ ...options, fetch });
    await expect(client.getOrder(7)).rejects.toMatchObject({ httpStatus: 0, svcStatus: [], retryable: true });
    expect(sent).toHaveLength(4);
  });

  it('in placeOrders, sends again only the entries refused for now, with their request ids, after Retry-After', async () => {
    const result = (requestId: string, status: number[], order: unknown) => ({
      requestId,
      status,
      order,
      ...(order ? {} : { messages: ['m'] }),
    });
    const { sent, fetch } = scripted([
      json(
        200,
        '2004',
        {
          results: [result('a', [2010], ORDER), result('b', [5030], null), result('c', [4001], null)],
        },
        { 'retry-after': '0' },
      ),
      json(200, '2004', { results: [result('b', [2010], { ...ORDER, orderId: 8 })] }),
    ]);
    const client = new OrdersClient({ ...options, fetch });
    const entries = ['a', 'b', 'c'].map((requestId) => ({ requestId, ...REQUEST }));
    const results = await client.placeOrders(entries);
    expect(results.map((r) => [r.requestId, r.svcStatus])).toEqual([
      ['a', [2010]],
      ['b', [2010]],
      ['c', [4001]],
    ]);
    expect(results[1]!.order).toMatchObject({ orderId: 8 });
    expect(JSON.parse(sent[1]!.body!)).toEqual({ orders: [entries[1]] });
  });
});
