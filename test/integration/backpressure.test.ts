import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/redis.js';
import { createSigningClient } from '../helpers/signed-client.js';
import { createProcessMetrics } from '../../src/metrics/http.metrics.js';
import { REQUEST_LABELS } from '../../src/http/request-labels.js';
import { publishStoreCounts } from '../../src/metrics/order-store.metrics.js';
import { createMetricsListener, createWebApp } from '../../src/processes/web.process.js';
import { entry, postBatch, resultsOf, statusesOf } from '../helpers/batches.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { valueOf } from '../helpers/prometheus-text.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';
import { until } from '../helpers/wait.js';

const LIMIT = 2;
const ASYNC = { headers: { Prefer: 'respond-async' } };

let service: TestService;
let buyer: Credentials;
let metrics: ReturnType<typeof createMetricsListener>;

const ordersStored = () => service.probe.scalar<number>('SELECT count(*) FROM orders');

// No worker at first: what is accepted stays unsettled, so the limit is reached by the test's own orders.
beforeAll(async () => {
  // Each client's share as large as the whole: these tests are about the service's limit.
  const env = { MAX_UNSETTLED_ORDERS: String(LIMIT), MAX_UNSETTLED_PER_CLIENT: '1000' };
  service = await createTestService({ env });
  await service.importCatalog(VENDORS, LISTINGS);
  buyer = await service.client('eager buyer');
  metrics = createMetricsListener(service.deps, createProcessMetrics(REQUEST_LABELS));
});
afterAll(() => service.close());

describe(`when more than MAX_UNSETTLED_ORDERS (${LIMIT}) orders are unsettled`, () => {
  it('then a batch is admitted in request order up to the limit, the rest of its real orders refused with 5030', async () => {
    const res = await postBatch(service, buyer, [
      entry('b1', buyer.ccToken),
      entry('b2', buyer.ccToken),
      entry('b3', buyer.ccToken),
      entry('b4', buyer.ccToken),
      entry('dry', buyer.ccToken, { dryrun: true }),
    ]);
    expect(res.status).toBe(200);
    expect(res.headers['svc-status']).toBe('2004');
    // Each entry as if sent alone, one after another: admitted while at most LIMIT were unsettled.
    expect(statusesOf(res)).toEqual([[2010], [2010], [2010], [5030], [2002]]);
    expect(resultsOf(res)[3]).toMatchObject({
      order: null,
      messages: [expect.stringMatching(/retry after/)],
    });
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(await ordersStored()).toBe(3);
  });

  it('then a real order alone is 503 with 5030 and Retry-After, and nothing is stored', async () => {
    const res = await signed(service.app, buyer, 'POST', '/v1/orders', orderBody(buyer.ccToken), ASYNC);
    expect(res.status).toBe(503);
    expect(res.headers['svc-status']).toBe('5030');
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(res.body.messages).toEqual([expect.stringMatching(/too many orders/)]);
    const batch = await postBatch(service, buyer, [entry('b5', buyer.ccToken), entry('b6', buyer.ccToken)]);
    expect(statusesOf(batch)).toEqual([[5030], [5030]]);
    expect(await ordersStored()).toBe(3);
  });

  it('then an order refused 5030 costs one request of the rate limit, its items given back, alone or in a batch', async () => {
    // One request a second, a burst of two: an order of 5 items charged and kept would leave a debt of 3.
    const limited = createWebApp({
      ...service.deps,
      config: { ...service.deps.config, RATE_LIMIT_PER_S: 1 },
    });
    const redis = service.deps.redis;
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
    const fiveItems = (ccToken: string) => ({
      ...orderBody(ccToken),
      listings: [{ listingId: LISTINGS[0]!.listingId, quantity: 5 }],
    });
    const alone = async (client: Credentials) => {
      const res = await signed(limited, client, 'POST', '/v1/orders', fiveItems(client.ccToken), ASYNC);
      expect(res.headers['svc-status']).toBe('5030');
    };
    const inBatch = async (client: Credentials) => {
      const body = { orders: [{ ...fiveItems(client.ccToken), requestId: 'refused' }] };
      const res = await signed(limited, client, 'POST', '/v1/order-batches', body);
      expect(statusesOf(res)).toEqual([[5030]]);
    };
    for (const send of [alone, inBatch]) {
      const client = await service.client('buyer told to come back');
      await send(client);
      // The burst's second token is still there: the next request is answered, not 4291.
      const next = await signed(limited, client, 'GET', '/v1/orders/1');
      expect(next.headers['svc-status']).toBe('4041');
    }
    expect(await ordersStored()).toBe(3);
  });

  it('then dry runs, gets and searches are still answered', async () => {
    const dryRun = await signed(
      service.app,
      buyer,
      'POST',
      '/v1/orders',
      orderBody(buyer.ccToken, { dryrun: true }),
    );
    expect(dryRun.headers['svc-status']).toBe('2002');
    const search = await signed(service.app, buyer, 'GET', '/v1/orders');
    expect(search.headers['svc-status']).toBe('2000');
    expect(search.body.orders).toHaveLength(3);
    const got = await signed(service.app, buyer, 'GET', `/v1/orders/${search.body.orders[0].orderId}`);
    expect(got.headers['svc-status']).toBe('2000');
  });

  it('then /metrics shows the unsettled orders, their items and the limit', async () => {
    // What the clock publishes every STORE_COUNTS_EVERY_S.
    await publishStoreCounts(service.deps.store, service.deps.redis, service.config.REDIS_PREFIX);
    const text = (await supertest(metrics).get('/metrics').expect(200)).text;
    expect(valueOf(text, 'bookorders_orders_unsettled', { phase: 'queued' })).toBe(3);
    expect(valueOf(text, 'bookorders_order_items_unsettled', { phase: 'queued' })).toBe(3);
    expect(valueOf(text, 'bookorders_order_items_unsettled', { phase: 'reserved' })).toBe(0);
    expect(valueOf(text, 'bookorders_orders_unsettled_limit')).toBe(LIMIT);
  });

  it('then once a worker settles the orders, real orders are accepted again within a few seconds', async () => {
    await service.startWorker();
    let last = 0;
    await until(
      async () => {
        const res = await signed(service.app, buyer, 'POST', '/v1/orders', orderBody(buyer.ccToken), ASYNC);
        last = res.status;
        return res.headers['svc-status'] === '2010';
      },
      20_000,
      'an order accepted after the backlog settled',
    );
    expect(last).toBe(200);
  });
});

describe('when the default MAX_UNSETTLED_ORDERS is far away', () => {
  it('then real orders, alone and in batches, are accepted', async () => {
    const relaxed = await createTestService();
    try {
      await relaxed.importCatalog(VENDORS, LISTINGS);
      const client = await relaxed.client('relaxed buyer');
      const orders = Array.from({ length: 5 }, (_, i) => entry(`r${i}`, client.ccToken));
      const batch = await postBatch(relaxed, client, orders);
      expect(statusesOf(batch)).toEqual(orders.map(() => [2010]));
      expect(batch.headers['retry-after']).toBeUndefined();
      const alone = await signed(relaxed.app, client, 'POST', '/v1/orders', orderBody(client.ccToken), ASYNC);
      expect(alone.headers['svc-status']).toBe('2010');
      expect(await relaxed.probe.scalar('SELECT count(*) FROM orders')).toBe(6);
    } finally {
      await relaxed.close();
    }
  });
});

describe('when one client floods the backlog (MAX_UNSETTLED_PER_CLIENT, by default a tenth of the limit)', () => {
  it('then past its share only that client gets 5030: another client’s orders are accepted', async () => {
    const shared = await createTestService({ env: { MAX_UNSETTLED_ORDERS: '40' } });
    try {
      await shared.importCatalog(VENDORS, LISTINGS);
      const port = await freePort();
      await shared.spawn('src/server.ts', { PORT: String(port) }, 'web listening');
      const clientOf = async (name: string) => {
        const creds = await shared.client(name);
        const http = createSigningClient({ baseUrl: `http://127.0.0.1:${port}`, ...creds });
        const order = () => http.request('POST', '/v1/orders', orderBody(creds.ccToken), ASYNC);
        return { creds, http, order };
      };
      const flooder = await clientOf('flooding client');
      const other = await clientOf('other client');
      // No worker runs: every accepted order stays unsettled. The flooder asks for 300 real orders.
      const seen: number[] = [];
      for (let b = 0; b < 3; b++) {
        const orders = Array.from({ length: 100 }, (_, i) => entry(`f${b}-${i}`, flooder.creds.ccToken));
        const res = await flooder.http.request('POST', '/v1/order-batches', { orders });
        expect(res.svcStatus).toEqual([2004]);
        const results = (res.body as { results: { status: number[]; messages?: string[] }[] }).results;
        seen.push(...results.map((r) => r.status[0]!));
        const refused = results.find((r) => r.status[0] === 5030);
        expect(refused?.messages).toEqual([expect.stringMatching(/^too many of this client's orders/)]);
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
      // A share of 4 (40 / 10): admitted while at most 4 of its orders were unsettled.
      expect(seen.filter((code) => code === 2010)).toHaveLength(5);
      const alone = await flooder.order();
      expect(alone.status).toBe(503);
      expect(alone.svcStatus).toEqual([5030]);
      for (let i = 0; i < 5; i++) {
        const res = await other.order();
        expect(res.svcStatus).toEqual([2010]);
      }
      expect(await shared.probe.scalar('SELECT count(*) FROM orders')).toBe(10);
    } finally {
      await shared.close();
    }
  });
});

describe('when one client’s orders are large (the backlog counts items, not orders)', () => {
  it('then it is refused 5030 once its unsettled items pass its share, while another client’s orders are accepted', async () => {
    // A share of 40 items (400 / 10). By orders, the heavy client would be admitted 41 orders.
    const shared = await createTestService({ env: { MAX_UNSETTLED_ORDERS: '400' } });
    try {
      await shared.importCatalog(VENDORS, LISTINGS);
      const heavy = await shared.client('heavy client');
      const light = await shared.client('light client');
      const tenItems = (ccToken: string) => ({ listings: [{ listingId: 2002, quantity: 10 }], ccToken });
      const heavyOrder = () =>
        signed(
          shared.app,
          heavy,
          'POST',
          '/v1/orders',
          orderBody(heavy.ccToken, tenItems(heavy.ccToken)),
          ASYNC,
        );
      // No worker runs: every accepted order stays unsettled. Admitted while at most 40 of its items were.
      const alone: string[] = [];
      for (let i = 0; i < 6; i++) alone.push(String((await heavyOrder()).headers['svc-status']));
      expect(alone).toEqual(['2010', '2010', '2010', '2010', '2010', '5030']);
      const refused = await heavyOrder();
      expect(refused.status).toBe(503);
      expect(refused.body.messages).toEqual([expect.stringMatching(/^too many of this client's orders/)]);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      const batch = await postBatch(
        shared,
        heavy,
        Array.from({ length: 3 }, (_, i) => entry(`h${i}`, heavy.ccToken, tenItems(heavy.ccToken))),
      );
      expect(statusesOf(batch)).toEqual([[5030], [5030], [5030]]);
      const itemsOf = (clientId: number) =>
        shared.probe.scalar(
          "SELECT count(*) FROM order_items i JOIN orders o ON o.order_id = i.order_id WHERE o.client_id = ? AND o.phase <> 'settled'",
          clientId,
        );
      expect(await itemsOf(heavy.clientId)).toBe(50);

      // The other client's orders, of one item and of ten, are accepted: the service holds 55 of its 400 items.
      for (let i = 0; i < 5; i++) {
        const res = await signed(shared.app, light, 'POST', '/v1/orders', orderBody(light.ccToken), ASYNC);
        expect(res.headers['svc-status']).toBe('2010');
      }
      const lightBatch = await postBatch(shared, light, [
        entry('l0', light.ccToken, tenItems(light.ccToken)),
        entry('l1', light.ccToken),
      ]);
      expect(statusesOf(lightBatch)).toEqual([[2010], [2010]]);
      expect(await itemsOf(light.clientId)).toBe(16);
      expect(await shared.deps.store.orders.countUnsettledOfClient(heavy.clientId)).toBe(50);
    } finally {
      await shared.close();
    }
  });

  it('then a batch of large orders is admitted in request order until its items pass the share', async () => {
    const shared = await createTestService({ env: { MAX_UNSETTLED_ORDERS: '400' } });
    try {
      await shared.importCatalog(VENDORS, LISTINGS);
      const heavy = await shared.client('heavy batcher');
      const sizes = [25, 10, 10, 1, 1];
      const res = await postBatch(
        shared,
        heavy,
        sizes.map((quantity, i) =>
          entry(`s${i}`, heavy.ccToken, { listings: [{ listingId: 2002, quantity }] }),
        ),
      );
      // 0 → 25 → 35 → 45: the third is admitted at 35 (at most 40), the fourth refused at 45.
      expect(statusesOf(res)).toEqual([[2010], [2010], [2010], [5030], [5030]]);
      expect(resultsOf(res)[3]).toMatchObject({
        messages: [expect.stringMatching(/^too many of this client's orders/)],
      });
      expect(await shared.probe.scalar('SELECT count(*) FROM order_items')).toBe(45);
    } finally {
      await shared.close();
    }
  });
});
