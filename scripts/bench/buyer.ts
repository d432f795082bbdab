// The benchmarks' one buyer: a fresh store with the load catalog and one client with a card, and its orders of
// one copy of a load listing, signed and posted as a real client would.
import crypto from 'node:crypto';
import http from 'node:http';
import { addCard, createClient } from '../../src/services/client-keys.js';
import type { CatalogListing } from '../../src/store/port/store.port.js';
import { freshStore, type BenchStore, type StoreKind } from './stores.js';
import { LOAD_LISTINGS, LOAD_VENDOR } from './load-mix.js';
import { signedHeaders } from '../../test/helpers/signed-client.js';

export interface Buyer {
  accessKey: string;
  secretKey: string;
  ccToken: string;
}

/** The ship and bill address of every benchmark's orders. */
export const ADDRESS = {
  name: 'Bench',
  address1: '1 Loop',
  city: 'Austin',
  provstate: 'TX',
  country: 'USA',
  zipcode: '78701',
  phone: '1',
};

/**
 * A fresh store (named after the benchmark) with `listings` of the load vendor (the load catalog when absent) and
 * one client with a card (named `clientName`).
 */
export async function prepareBuyer(
  kind: StoreKind,
  name: string,
  listings: CatalogListing[] = LOAD_LISTINGS,
  clientName = 'bench client',
): Promise<{ store: BenchStore; buyer: Buyer }> {
  const store = await freshStore(kind, name);
  return { store, buyer: await addBuyer(store, listings, clientName) };
}

/** `listings` of the load vendor and one client with a card (named `clientName`) added to `store`, migrated first. */
export async function addBuyer(
  store: BenchStore,
  listings: CatalogListing[] = LOAD_LISTINGS,
  clientName = 'bench client',
): Promise<Buyer> {
  const opened = await store.open('bench');
  try {
    await opened.catalog.importCatalog([LOAD_VENDOR], listings);
    const client = await createClient(opened.clients, clientName, Date.now());
    const card = await addCard(opened.clients, client.clientId, false, Date.now());
    return { accessKey: client.accessKey, secretKey: client.secretKey, ccToken: card.token };
  } finally {
    await opened.close();
  }
}

/** A real order of one copy of each of `listingIds`. */
export function orderOf(buyer: Buyer, listingIds: readonly number[]) {
  return {
    shipAddr: ADDRESS,
    billAddr: ADDRESS,
    ccToken: buyer.ccToken,
    listings: listingIds.map((listingId) => ({ listingId, quantity: 1 })),
    shippingMode: 'S',
    domain: 'bookmarket.com',
  };
}

/** A real order of one copy of one of the load listings. */
export function loadOrder(buyer: Buyer) {
  return orderOf(buyer, [LOAD_LISTINGS[crypto.randomInt(LOAD_LISTINGS.length)]!.listingId]);
}

/** The bestsellers of the callers' shape: every order takes one copy of each of the same few listings. */
export const HOT_LISTINGS = LOAD_LISTINGS.slice(0, 3).map((l) => l.listingId);

/** A real order of one copy of each hot listing (the callers' shape). */
export function hotOrder(buyer: Buyer) {
  return orderOf(buyer, HOT_LISTINGS);
}

/**
 * The load generator's connections, kept open between requests. node:http rather than fetch: fetch (undici and
 * its WHATWG streams) cost the load generator ~0.5 ms of CPU per order, on the cores the service shares with it.
 */
const AGENT = new http.Agent({ keepAlive: true });

/** A signed POST of `body`; resolves with the response's Svc-Status and JSON body. */
export function postSigned(
  baseUrl: string,
  buyer: Buyer,
  path: string,
  body: string,
  headers: Record<string, string> = {},
  requestId: string = crypto.randomUUID(),
): Promise<{ status: string | null; body: unknown }> {
  return sendSigned(baseUrl, buyer, 'POST', path, body, headers, requestId);
}

/** A signed request (a GET when `body` is undefined); resolves with the response's Svc-Status and JSON body. */
export function sendSigned(
  baseUrl: string,
  buyer: Buyer,
  method: 'GET' | 'POST',
  path: string,
  body: string | undefined,
  headers: Record<string, string> = {},
  requestId: string = crypto.randomUUID(),
): Promise<{ status: string | null; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${baseUrl}${path}`,
      {
        method,
        agent: AGENT,
        headers: { ...signedHeaders(buyer, method, path, body, requestId), ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const status = res.headers['svc-status'];
          try {
            resolve({
              status: typeof status === 'string' ? status : null,
              body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown,
            });
          } catch (err) {
            reject(err as Error);
          }
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Orders answered 5030 (SQLite's write lock not had within the web's bound, or backpressure) and sent again. */
export const refusedBusy = { count: 0 };

/**
 * One real order sent with Prefer: respond-async; throws unless it is accepted (2010). A 5030 is sent again
 * with the same request id, as a client would after Retry-After (here at once: the benchmark counts them).
 */
export async function postAsyncOrder(
  baseUrl: string,
  buyer: Buyer,
  order: (buyer: Buyer) => object = loadOrder,
): Promise<void> {
  const body = JSON.stringify(order(buyer));
  const requestId = crypto.randomUUID();
  for (let attempt = 0; ; attempt++) {
    const res = await postSigned(baseUrl, buyer, '/v1/orders', body, { prefer: 'respond-async' }, requestId);
    if (res.status === '2010') return;
    if (res.status !== '5030' || attempt >= 10)
      throw new Error(`order refused: ${res.status} ${JSON.stringify(res.body)}`);
    refusedBusy.count++;
  }
}

/** Runs `requests` calls of `send`, `inFlight` at once; resolves with the wall seconds they took. */
export async function timed(requests: number, inFlight: number, send: () => Promise<void>): Promise<number> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(inFlight, requests) }, async () => {
      while (next++ < requests) await send();
    }),
  );
  return (performance.now() - started) / 1000;
}
