// The client package (client/, book-order-client) against the real service: a web server on a real port, a real
// worker, Redis and the store of the vitest project. Every method of its interface, as a caller uses it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  OrderApiError,
  OrdersClient,
  verifyWebhook,
  WebhookVerificationError,
  type OrderBatchEntry,
  type OrderRequest,
  type WebhookEvent,
} from '../../client/src/index.js';
import { addWebhook } from '../../src/services/webhooks.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, type Credentials, type TestService } from '../helpers/test-service.js';
import { until } from '../helpers/wait.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const QUEUED = 1;
const ORDERED = 5;

let service: TestService;
let server: http.Server;
let baseUrl: string;
let receiver: Receiver;

beforeAll(async () => {
  service = await createTestService({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  await service.importCatalog(VENDORS, LISTINGS);
  server = http.createServer(service.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  receiver = await startReceiver();
  await service.startWorker();
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await receiver?.close();
  await service?.close();
});

/** A new client of the service, its card, and the package's client for it (counting the requests it sends). */
async function caller(name: string, options: { maxRetries?: number } = {}) {
  const creds = await service.client(name);
  const sent: { method: string; url: string; requestId: string }[] = [];
  const fetch: typeof globalThis.fetch = (input, init) => {
    const headers = init?.headers as Record<string, string>;
    sent.push({ method: init!.method!, url: String(input), requestId: headers['svc-requestid']! });
    return globalThis.fetch(input, init);
  };
  const client = new OrdersClient({
    baseUrl,
    accessKey: creds.accessKey,
    secretKey: creds.secretKey,
    fetch,
    ...options,
  });
  const order = (overrides: Record<string, unknown> = {}) =>
    orderBody(creds.ccToken, overrides) as OrderRequest;
  return { creds, client, sent, order };
}

const itemStatuses = (order: { listings: { orderItems: { status: number }[] }[] }) =>
  order.listings.flatMap((l) => l.orderItems.map((i) => i.status));

const ordersOf = (creds: Credentials) =>
  service.probe.scalar<number>('SELECT count(*) FROM orders WHERE client_id = ?', creds.clientId);

describe('OrdersClient against the real service', () => {
  it('placeOrder buys the order and resolves to it; the same requestId again is the same order', async () => {
    const { creds, client, order } = await caller('one order');
    const placed = await client.placeOrder(order(), { requestId: 'first-order' });
    expect(placed.orderId).toBeGreaterThan(0);
    expect(placed.dryrun).toBe(false);
    expect(itemStatuses(placed)).toEqual([ORDERED]);
    const again = await client.placeOrder(order(), { requestId: 'first-order' });
    expect(again).toEqual(placed);
    expect(await ordersOf(creds)).toBe(1);
  });

  it('dryRun prices the order and stores nothing; getOrder fetches a placed order', async () => {
    const { creds, client, order } = await caller('dry runner');
    const priced = await client.dryRun(order({ listings: [{ listingId: 2002, quantity: 2 }] }));
    expect(priced).toMatchObject({ orderId: 0, dryrun: true });
    expect(priced.listings[0]!.orderItems).toHaveLength(2);
    expect(await ordersOf(creds)).toBe(0);
    const placed = await client.placeOrder(order(), { respondAsync: true });
    const fetched = await client.getOrder(placed.orderId);
    expect(fetched.orderId).toBe(placed.orderId);
    expect(fetched.referenceId).toBe(placed.referenceId);
  });

  it('rejects with an OrderApiError, sent once, when the service refuses the request', async () => {
    const { client, sent, order } = await caller('refused');
    const missing = await client.getOrder(999_999_999).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OrderApiError);
    expect(missing).toMatchObject({ httpStatus: 404, svcStatus: [4041], retryable: false });
    const bad = await client
      .placeOrder(order({ listings: [{ listingId: 2002, quantity: 0 }] }), { requestId: 'bad-one' })
      .catch((e: unknown) => e as OrderApiError);
    expect(bad).toMatchObject({ httpStatus: 400, requestId: 'bad-one', retryable: false });
    expect((bad as OrderApiError).svcStatus).toContain(4002);
    expect((bad as OrderApiError).messages.join('\n')).toMatch(/quantity/);
    expect(sent).toHaveLength(2);
    const wrongKey = new OrdersClient({ baseUrl, accessKey: 'AKnope', secretKey: 'nope' });
    await expect(wrongKey.getOrder(1)).rejects.toMatchObject({ httpStatus: 401, retryable: false });
  });

  it('placeOrders answers one result per entry in the entries’ order, 500 at most per batch', async () => {
    const { creds, client, sent, order } = await caller('bulk');
    const entries: OrderBatchEntry[] = Array.from({ length: 1_203 }, (_, i) => ({
      requestId: `dry-${i}`,
      ...order({ dryrun: true }),
    }));
    entries[700] = { ...entries[700]!, listings: [{ listingId: 424242, quantity: 1 }] };
    entries.push({ requestId: 'real-1', ...order() }, { requestId: 'real-2', ...order() });
    const results = await client.placeOrders(entries);
    expect(results.map((r) => r.requestId)).toEqual(entries.map((e) => e.requestId));
    expect(results.filter((r) => r.svcStatus[0] === 2002)).toHaveLength(1_202);
    expect(results[700]).toMatchObject({
      svcStatus: [4220],
      order: null,
      messages: [expect.stringMatching(/424242/)],
    });
    expect(results.slice(-2).map((r) => r.svcStatus)).toEqual([[2010], [2010]]);
    const batches = sent.filter((s) => s.url.endsWith('/v1/order-batches'));
    expect(batches).toHaveLength(3);
    // Again: the real ones are answered as they stand, nothing is doubled.
    const twice = await client.placeOrders(entries.slice(-2));
    expect(twice.map((r) => r.order?.orderId)).toEqual(results.slice(-2).map((r) => r.order?.orderId));
    expect(await ordersOf(creds)).toBe(2);
  });

  it('searchOrders walks every page of the search, each order once', async () => {
    const { client, order } = await caller('searcher');
    const placed = await client.placeOrders(
      Array.from({ length: 7 }, (_, i) => ({
        requestId: `s-${i}`,
        ...order({ referenceId: `ref-${i % 2}` }),
      })),
    );
    const found: number[] = [];
    for await (const o of client.searchOrders({ limit: 2, sortOrder: 'ascending' })) found.push(o.orderId);
    expect(found).toEqual(placed.map((r) => r.order!.orderId).sort((a, b) => a - b));
    const odd: number[] = [];
    for await (const o of client.searchOrders({ referenceId: 'ref-1', limit: 1 })) odd.push(o.orderId);
    expect(odd).toHaveLength(3);
    const none: number[] = [];
    for await (const o of client.searchOrders({ orderId: [999_999_998, 999_999_999] })) none.push(o.orderId);
    expect(none).toEqual([]);
  });

  it('waitForOrder resolves once no item is QUEUED any more', async () => {
    const { client, order } = await caller('waiter');
    const [accepted] = await client.placeOrders([{ requestId: 'w-1', ...order() }]);
    expect(itemStatuses(accepted!.order!)).toEqual([QUEUED]);
    const settled = await client.waitForOrder(accepted!.order!.orderId);
    expect(itemStatuses(settled)).toEqual([ORDERED]);
  });

  it('verifyWebhook accepts the service’s deliveries, and refuses them under another secret or body', async () => {
    const { creds, client, order } = await caller('hooked');
    const added = await addWebhook(
      { store: service.deps.store, allowPrivate: true, clock: Date.now },
      creds.clientId,
      receiver.url('/client-package'),
    );
    if (added.kind !== 'added') throw new Error(added.message);
    const placed = await client.placeOrder(order());
    await until(() => receiver.received.some((r) => r.path === '/client-package'), 20_000, 'a delivery');
    const delivery = receiver.received.find((r) => r.path === '/client-package')!;
    const event: WebhookEvent = verifyWebhook(delivery.body, delivery.headers, added.webhook.secret);
    expect(event).toMatchObject({ type: 'order.updated', sequence: 1, order: { orderId: placed.orderId } });
    expect(() => verifyWebhook(delivery.body, delivery.headers, 'whsec_wrong')).toThrow(
      WebhookVerificationError,
    );
    expect(() => verifyWebhook(`${delivery.body}\n`, delivery.headers, added.webhook.secret)).toThrow(
      WebhookVerificationError,
    );
    const later = Date.parse(String(delivery.headers['svc-date'])) + 301_000;
    expect(() =>
      verifyWebhook(delivery.body, delivery.headers, added.webhook.secret, { now: later }),
    ).toThrow(/more than 300 s/);
  });
});
