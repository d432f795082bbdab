import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SigningClient } from '../helpers/signed-client.js';
import { LISTINGS, orderBody } from '../helpers/fixtures.js';
import { heavyClientWeb } from '../helpers/heavy-client.js';
import type { Credentials } from '../helpers/test-service.js';

// Issue 41, finding 2: a client's 200 orders of 250 items each, searched by vendor and item update date with
// limit=1, held SQLite's event loop seconds per search (4 at once: another client's cheap search waited 30 s,
// /healthz 22 s), and on PostgreSQL ran on in the server after their 503. The plan now tests an order's vendor and
// item conditions once per order, by an index seek: heavy searches cost about what a cheap one does, and the other
// clients' requests are answered meanwhile. Observed as clients would, against a web process of its own.
const ORDERS = 200;
const ITEMS = 250;
const HEAVY_CLIENTS = 4;
const ROUNDS = 5;
/** A generous bound for a busy machine (the findings saw 22–30 s). */
const P99_BOUND_MS = 2000;
const T0 = Date.now() - 10 * 86_400_000;
const listing = LISTINGS[0]!;

let baseUrl: string;
let heavy: Credentials;
let other: Credentials;
let clientOf: (creds: Credentials) => SigningClient;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  // What is measured is the event loop.
  ({ baseUrl, heavy, other, clientOf, stop } = await heavyClientWeb({
    listing,
    t0: T0,
    orders: ORDERS,
    items: ITEMS,
  }));
}, 120_000);

afterAll(async () => {
  await stop?.();
});

const p99 = (ms: number[]) => [...ms].sort((a, b) => a - b)[Math.ceil(ms.length * 0.99) - 1]!;

/** Times `fn` again and again until `done` says stop (at least once). */
async function timedUntil(done: () => boolean, fn: () => Promise<void>): Promise<number[]> {
  const times: number[] = [];
  do {
    const began = performance.now();
    await fn();
    times.push(performance.now() - began);
  } while (!done());
  return times;
}

describe('heavy searches of one client (issue 41)', () => {
  // Orders 120..199 have items updated at or after this: the last 80 orders, 20,000 items (a wide range).
  const from = new Date(T0 + 120 * 1000 + 60_000).toISOString();
  const heavyQuery = `/v1/orders?vendorId=${listing.vendorId}&itemUpdateDateStart=${from}&limit=1`;

  it('answer correctly, in both sort orders', async () => {
    const c = clientOf(heavy);
    type Page = { orders: { orderId: number; listings: { orderItems: unknown[] }[] }[] };
    const ascending = await c.request<Page>('GET', heavyQuery);
    expect(ascending.status).toBe(200);
    expect(ascending.body.orders).toHaveLength(1);
    expect(ascending.body.orders[0]!.listings[0]!.orderItems).toHaveLength(ITEMS);
    const descending = await c.request('GET', `${heavyQuery}&sortOrder=descending`);
    expect(descending.status).toBe(200);
    const none = await c.request<{ orders: unknown[] }>(
      'GET',
      `/v1/orders?vendorId=${listing.vendorId + 1000}&itemUpdateDateStart=${from}&limit=1`,
    );
    expect(none.body.orders).toEqual([]);
  }, 60_000);

  it(`leave /healthz and another client's search answered, p99 within ${P99_BOUND_MS} ms, while ${HEAVY_CLIENTS} run at once`, async () => {
    let heavyLeft = HEAVY_CLIENTS;
    const heavyTimes: number[] = [];
    const statuses = new Set<number>();
    const heavyRuns = Array.from({ length: HEAVY_CLIENTS }, async (_, k) => {
      const c = clientOf(heavy);
      for (let round = 0; round < ROUNDS; round++) {
        const began = performance.now();
        const res = await c.request('GET', `${heavyQuery}${k % 2 ? '&sortOrder=descending' : ''}`);
        heavyTimes.push(performance.now() - began);
        statuses.add(res.status);
      }
      heavyLeft--;
    });
    const cheap = clientOf(other);
    const [healthz, search] = await Promise.all([
      timedUntil(
        () => heavyLeft === 0,
        async () => {
          expect((await fetch(`${baseUrl}/healthz`)).status).toBe(200);
        },
      ),
      timedUntil(
        () => heavyLeft === 0,
        async () => {
          expect((await cheap.request('GET', '/v1/orders?limit=1')).status).toBe(200);
        },
      ),
      ...heavyRuns,
    ]);
    expect([...statuses]).toEqual([200]);
    expect(p99(healthz), `healthz ${JSON.stringify(healthz.map(Math.round))}`).toBeLessThan(P99_BOUND_MS);
    expect(p99(search), `search ${JSON.stringify(search.map(Math.round))}`).toBeLessThan(P99_BOUND_MS);
    // A heavy search itself costs about what a cheap one does: well under the bound too.
    expect(p99(heavyTimes), `heavy ${JSON.stringify(heavyTimes.map(Math.round))}`).toBeLessThan(P99_BOUND_MS);
  }, 90_000);
});

describe('a batch of 50,000 items (issue 41)', () => {
  it(`leaves /healthz and another client's search answered, p99 within ${P99_BOUND_MS} ms, while it is accepted`, async () => {
    const batch = {
      orders: Array.from({ length: ORDERS }, (_, i) => ({
        ...orderBody(heavy.ccToken),
        requestId: `big-${i}`,
        listings: [{ listingId: listing.listingId, quantity: ITEMS }],
      })),
    };
    let posting = true;
    const posted = clientOf(heavy)
      .request<{ results: { status: number[]; order: unknown }[] }>('POST', '/v1/order-batches', batch)
      .finally(() => (posting = false));
    const cheap = clientOf(other);
    const [healthz, search] = await Promise.all([
      timedUntil(
        () => !posting,
        async () => {
          expect((await fetch(`${baseUrl}/healthz`)).status).toBe(200);
        },
      ),
      timedUntil(
        () => !posting,
        async () => {
          expect((await cheap.request('GET', '/v1/orders?limit=1')).status).toBe(200);
        },
      ),
    ]);
    const answer = await posted;
    expect(answer.status).toBe(200);
    // Streamed a few entries at a time (about 3 MB here), not built whole.
    expect(answer.headers['transfer-encoding']).toBe('chunked');
    expect(answer.body.results).toHaveLength(ORDERS);
    expect(answer.body.results.filter((r) => r.order === null)).toEqual([]);
    expect(p99(healthz), `healthz ${JSON.stringify(healthz.map(Math.round))}`).toBeLessThan(P99_BOUND_MS);
    expect(p99(search), `search ${JSON.stringify(search.map(Math.round))}`).toBeLessThan(P99_BOUND_MS);
  }, 90_000);
});
