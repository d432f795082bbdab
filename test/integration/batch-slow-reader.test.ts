// A batch's large answer to a client that reads it slowly: the service writes it only as fast as it is read,
// answering others meanwhile, and the client gets it whole and correct (a batch of orders of 250 items
// answers several MB; http/list-stream.ts).
import crypto from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sign } from '../../src/auth/signature.js';
import { entry, itemStatuses, type BatchResult } from '../helpers/batches.js';
import { LISTINGS, VENDORS } from '../helpers/fixtures.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';
import { sleep } from '../helpers/wait.js';

/** A listing with stock for every order here. */
const BIG = {
  listingId: 9901,
  vendorId: 601,
  title: 'Bulk',
  isbn: '9780000099001',
  priceCents: 999,
  quantity: 1e6,
};
const ORDERS = 50;
const ITEMS = 250;

let service: TestService;
let server: http.Server;
let port: number;
let buyer: Credentials;

beforeAll(async () => {
  // Backpressure admits the whole batch (12,500 items); no worker runs: every item stays QUEUED.
  service = await createTestService({
    env: { MAX_UNSETTLED_ORDERS: '1000000', MAX_UNSETTLED_PER_CLIENT: '1000000' },
  });
  await service.importCatalog(VENDORS, [...LISTINGS, BIG]);
  buyer = await service.client('slow reader');
  server = http.createServer(service.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as net.AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await service?.close();
});

/** The ids of an order's items, as a batch result or a GET shows them. */
const itemIdsOf = (order: BatchResult['order']): number[] =>
  order!.listings.flatMap((l) =>
    l.orderItems.map((i) => (i as unknown as { orderItemId: number }).orderItemId),
  );

/** POST /v1/order-batches signed, over a connection of its own; resolves with the response, not yet read. */
function postBatch(creds: Credentials, body: string): Promise<http.IncomingMessage> {
  const requestId = crypto.randomUUID();
  const date = new Date().toISOString();
  const path = '/v1/order-batches';
  const signature = sign(creds.secretKey, { method: 'POST', path, rawQuery: '', date, requestId, body });
  return new Promise((resolve, reject) => {
    http
      .request({
        port,
        host: '127.0.0.1',
        method: 'POST',
        path,
        agent: false,
        headers: {
          'Content-Type': 'application/json',
          'Svc-RequestId': requestId,
          'Svc-Access-Key': creds.accessKey,
          'Svc-Date': date,
          'Svc-Signature': signature,
        },
      })
      .on('response', resolve)
      .on('error', reject)
      .end(body);
  });
}

describe('when a client reads a large batch answer slowly', () => {
  it('then it gets the answer whole and correct, and other clients are answered while it has stopped reading', async () => {
    const orders = Array.from({ length: ORDERS }, (_, n) =>
      entry(`slow-${n}-${crypto.randomUUID().slice(0, 8)}`, buyer.ccToken, {
        listings: [{ listingId: BIG.listingId, quantity: ITEMS }],
      }),
    );
    const res = await postBatch(buyer, JSON.stringify({ orders }));
    expect(res.statusCode).toBe(200);
    expect(res.headers['svc-status']).toBe('2004');
    expect(res.headers['content-length']).toBeUndefined();

    // The reader stops: the service is left with most of the answer unsent, and answers another client.
    await sleep(300);
    const other = await signed(service.app, buyer, 'GET', '/v1/orders/999999999');
    expect(other.headers['svc-status']).toBe('4041');

    // Then it reads a piece at a time, pausing between pieces.
    const pieces: Buffer[] = [];
    for await (const piece of res) {
      pieces.push(piece as Buffer);
      await sleep(5);
    }
    const text = Buffer.concat(pieces).toString('utf8');
    expect(text.length).toBeGreaterThan(500_000);
    const results = (JSON.parse(text) as { results: BatchResult[] }).results;
    expect(results.map((r) => [r.requestId, r.status])).toEqual(orders.map((o) => [o.requestId, [2010]]));
    for (const result of results) expect(itemStatuses(result)).toEqual(Array<number>(ITEMS).fill(1));
    const itemIds = results.flatMap((r) => itemIdsOf(r.order));
    expect(new Set(itemIds).size).toBe(ORDERS * ITEMS);
    // What the answer says is what is stored: an order read back has the same items.
    const last = results.at(-1)!.order!;
    const read = await signed(service.app, buyer, 'GET', `/v1/orders/${last.orderId}`);
    expect(itemIdsOf(read.body as BatchResult['order'])).toEqual(itemIdsOf(last));
  });
});
