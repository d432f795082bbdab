// The request kinds of the load test, each signed afresh per request (new Svc-RequestId and Svc-Date), so
// that the service does all of its work: authentication, HMAC over the body, validation, pricing, storage.
import crypto from 'node:crypto';
import type autocannon from 'autocannon';
import type { CatalogListing, CatalogVendor } from '../../src/store/port/store.port.js';
import { signedHeaders } from '../../test/helpers/signed-client.js';

export interface LoadClient {
  accessKey: string;
  secretKey: string;
  ccToken: string;
  orderIds: number[];
}

export type Kind = 'dry-run' | 'order-async' | 'get' | 'search' | 'over-limit';

/** The HTTP status and Svc-Status each kind should get; anything else is an error of the run. */
export const EXPECTED: Record<Kind, string[]> = {
  'dry-run': ['200 2002'],
  'order-async': ['200 2010'],
  get: ['200 2000'],
  search: ['200 2000'],
  // The deliberate errors: one key sending faster than RATE_LIMIT_PER_S.
  'over-limit': ['200 2000', '429 4291'],
};

export const LOAD_VENDOR: CatalogVendor = {
  vendorId: 990_001,
  name: 'Load Test Books',
  country: 'USA',
  currency: 'USD',
  rates: [
    { mode: 'S', zone: 'domestic', rate: { firstCents: 399, additionalCents: 199, minDays: 3, maxDays: 7 } },
    {
      mode: 'S',
      zone: 'international',
      rate: { firstCents: 1299, additionalCents: 599, minDays: 9, maxDays: 28 },
    },
  ],
};

export const LOAD_LISTINGS: CatalogListing[] = Array.from({ length: 10 }, (_, i) => ({
  listingId: 990_101 + i,
  vendorId: LOAD_VENDOR.vendorId,
  title: `Load test title ${i + 1}`,
  isbn: `97800000000${String(i).padStart(2, '0')}`,
  priceCents: 999 + i * 100,
  quantity: 100_000_000,
}));

const ADDRESS = {
  name: 'Load Tester',
  address1: '1 Bench Street',
  city: 'Austin',
  provstate: 'TX',
  country: 'USA',
  zipcode: '73301',
  phone: '+1 512 555 0100',
};

export function orderJson(client: LoadClient, dryrun: boolean): string {
  const listingId = LOAD_LISTINGS[crypto.randomInt(LOAD_LISTINGS.length)]!.listingId;
  return JSON.stringify({
    shipAddr: ADDRESS,
    billAddr: ADDRESS,
    ccToken: client.ccToken,
    listings: [{ listingId, quantity: 1 + crypto.randomInt(3) }],
    shippingMode: 'S',
    domain: 'bookmarket.com',
    referenceId: `load-${crypto.randomInt(1000)}`,
    ...(dryrun ? { dryrun: true } : {}),
  });
}

export interface Tally {
  statuses: Map<string, number>;
}

interface Context {
  client?: LoadClient;
}

/** A fresh request id and date, signed; JSON asked for, as a client does. */
function loadHeaders(client: LoadClient, method: string, pathWithQuery: string, body: string | undefined) {
  const [path = '', rawQuery = ''] = pathWithQuery.split(/\?(.*)/s);
  return {
    accept: 'application/json',
    ...signedHeaders(client, method, path, body, undefined, rawQuery),
  };
}

function target(
  kind: Kind,
  client: LoadClient,
): { method: string; path: string; body?: string; prefer?: string } {
  switch (kind) {
    case 'dry-run':
      return { method: 'POST', path: '/v1/orders', body: orderJson(client, true) };
    case 'order-async':
      return { method: 'POST', path: '/v1/orders', body: orderJson(client, false), prefer: 'respond-async' };
    case 'get':
    case 'over-limit': {
      const id = client.orderIds[crypto.randomInt(client.orderIds.length)] ?? 1;
      return { method: 'GET', path: `/v1/orders/${id}` };
    }
    case 'search':
      return crypto.randomInt(2) === 0
        ? { method: 'GET', path: '/v1/orders?limit=20&sortOrder=descending' }
        : { method: 'GET', path: `/v1/orders?referenceId=load-${crypto.randomInt(1000)}&limit=5` };
  }
}

/**
 * One autocannon request of a kind: each connection takes its own client from `clients` on its first request
 * (one access key per connection keeps every key under the rate limit), and every answer is tallied.
 */
export function loadRequest(kind: Kind, clients: () => LoadClient, tally: Tally): autocannon.Request {
  return {
    setupRequest(request, context) {
      const ctx = context as Context;
      ctx.client ??= clients();
      const { method, path, body, prefer } = target(kind, ctx.client);
      const headers = { ...loadHeaders(ctx.client, method, path, body), ...(prefer ? { prefer } : {}) };
      return { ...request, method: method as 'GET', path, headers, body };
    },
    onResponse(status, body, context, headers) {
      const header = Object.entries(headers ?? {}).find(([name]) => name.toLowerCase() === 'svc-status');
      const key = `${status} ${header?.[1] ?? ''}`.trim();
      tally.statuses.set(key, (tally.statuses.get(key) ?? 0) + 1);
      if (kind === 'order-async' && status === 200) {
        const orderId = (JSON.parse(body) as { orderId?: number }).orderId;
        const client = (context as Context).client;
        if (orderId && client && client.orderIds.length < 5000) client.orderIds.push(orderId);
      }
    },
  };
}
