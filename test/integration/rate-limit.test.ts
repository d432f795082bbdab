import type { App } from '../../src/http/app.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort } from '../../scripts/redis.js';
import { createRateLimiter } from '../../src/redis/token-bucket.js';
import { createSigningClient } from '../helpers/signed-client.js';
import { createWebApp } from '../../src/processes/web.process.js';
import { LISTINGS, orderBody, VENDORS } from '../helpers/fixtures.js';
import { storeHeavyClient } from '../helpers/heavy-client.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';

let service: TestService;
let app: App;
// The in-process app runs on a held clock, so buckets refill only when a test moves it (within the 300 s skew).
let now = Date.now();

beforeAll(async () => {
  // One request per second, a burst of two: a handful of requests in a row is enough to see it.
  service = await createTestService({ env: { RATE_LIMIT_PER_S: '1' }, clock: () => now });
  app = createWebApp(service.deps);
  // The limiter fails open while Redis is not connected yet; these tests are about a connected one.
  const redis = service.deps.redis;
  if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
});
afterAll(() => service.close());

const statusOf = (res: { headers: Record<string, string> }) => res.headers['svc-status'];

describe('rate limit per access key (RATE_LIMIT_PER_S)', () => {
  it('when a key sends more than its burst at once, then the rest are 4291 with Retry-After, and other keys are served', async () => {
    const busy = await service.client('busy client');
    const other = await service.client('quiet client');
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await signed(app, busy, 'GET', '/v1/orders/424242'));
    expect(answers.map(statusOf)).toEqual(['4041', '4041', '4291', '4291', '4291']);
    const refused = answers[2]!;
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.body.requestId).toBe(refused.request.getHeader('Svc-RequestId'));
    expect(refused.body.messages[0]).toMatch(/^Svc-Access-Key: more than 1 requests per second/);
    expect(statusOf(await signed(app, other, 'GET', '/v1/orders/424242'))).toBe('4041');
  });

  it('when the key waits as long as Retry-After says, then it is served again', async () => {
    const client = await service.client('patient client');
    await signed(app, client, 'GET', '/v1/orders/1');
    await signed(app, client, 'GET', '/v1/orders/1');
    const refused = await signed(app, client, 'GET', '/v1/orders/1');
    expect(statusOf(refused)).toBe('4291');
    now += 999;
    expect(statusOf(await signed(app, client, 'GET', '/v1/orders/1'))).toBe('4291');
    now += Number(refused.headers['retry-after']) * 1000 - 999;
    expect(statusOf(await signed(app, client, 'GET', '/v1/orders/1'))).toBe('4041');
  });

  it('when a refused key keeps sending, then the process refuses it alike without asking Redis until its wait has passed', async () => {
    const client = await service.client('looping client');
    const evalsha = vi.spyOn(service.deps.redis, 'evalsha');
    const asked = () =>
      evalsha.mock.calls.filter((call) => String(call[2]).endsWith(client.accessKey)).length;
    try {
      await signed(app, client, 'GET', '/v1/orders/1');
      await signed(app, client, 'GET', '/v1/orders/1');
      const first = await signed(app, client, 'GET', '/v1/orders/1');
      expect(statusOf(first)).toBe('4291');
      expect(asked()).toBe(3);
      now += 500;
      for (let i = 0; i < 5; i++) {
        const again = await signed(app, client, 'GET', '/v1/orders/1');
        expect(statusOf(again)).toBe('4291');
        expect(again.headers['retry-after']).toBe('1');
        expect(again.body.messages).toEqual(first.body.messages);
      }
      expect(asked()).toBe(3);
      // The bucket holds a token again 1 s after the refusal: Redis is asked, and the key is served.
      now += 500;
      expect(statusOf(await signed(app, client, 'GET', '/v1/orders/1'))).toBe('4041');
      expect(asked()).toBe(4);
    } finally {
      evalsha.mockRestore();
    }
  });

  it('counts only authenticated requests: a bad signature does not spend the key owner’s budget', async () => {
    const client = await service.client('spoofed client');
    for (let i = 0; i < 4; i++)
      await signed(app, { ...client, secretKey: 'not the secret' }, 'GET', '/v1/orders/1');
    expect(statusOf(await signed(app, client, 'GET', '/v1/orders/1'))).toBe('4041');
  });

  it('when requests of several keys arrive together, then one call to Redis takes each in turn, as one after the other', async () => {
    const { redis, config } = service.deps;
    const take = createRateLimiter({ redis, prefix: config.REDIS_PREFIX, perSecond: 1, clock: () => now });
    const evalsha = vi.spyOn(redis, 'evalsha');
    try {
      const keys = ['AKtogether-a', 'AKtogether-a', 'AKtogether-b', 'AKtogether-a', 'AKtogether-b'];
      const decisions = await Promise.all(keys.map((key) => take(key)));
      expect(decisions).toEqual([
        { allowed: true, retryAfterMs: 0 },
        { allowed: true, retryAfterMs: 0 },
        { allowed: true, retryAfterMs: 0 },
        { allowed: false, retryAfterMs: 1000 },
        { allowed: true, retryAfterMs: 0 },
      ]);
      // Other parts of the service may call scripts meanwhile: only the calls naming these keys count.
      const calls = evalsha.mock.calls.filter((call) =>
        call.some((arg) => String(arg).includes('AKtogether')),
      );
      expect(calls).toHaveLength(1);
    } finally {
      evalsha.mockRestore();
    }
  });

  it('when a key is charged again before its expiry would come too soon, then its expiry is not set again, unless a previous release charged it in between', async () => {
    const { redis, config } = service.deps;
    const at = now;
    // 10 per second, a bucket of 20: one token takes 100 ms to come back.
    const take = createRateLimiter({ redis, prefix: config.REDIS_PREFIX, perSecond: 10, clock: () => at });
    const key = `${config.REDIS_PREFIX}:ratelimit:AKexpiry`;
    const ttls: number[] = [];
    await take('AKexpiry');
    ttls.push(await redis.pttl(key));
    await take('AKexpiry');
    ttls.push(await redis.pttl(key));
    // Full again 100 ms, then 200 ms, after the takes: the first expiry (full + 1 s + a bucket's 2 s) still does.
    expect(ttls[0]).toBeGreaterThan(3000);
    expect(ttls[1]).toBeLessThanOrEqual(ttls[0]!);
    // The previous release's script (6dbff14), one token at the same time: its own expiry, 1 s past full.
    await redis.eval(
      `local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
      local tokens = tonumber(state[1]) - 1
      redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', state[2])
      redis.call('PEXPIRE', KEYS[1], math.ceil((20 - tokens) / 0.01) + 1000)`,
      1,
      key,
    );
    expect(await redis.pttl(key)).toBeLessThanOrEqual(1300);
    // 15 more: full again only 1.8 s from now, past the previous release's expiry, which is set again.
    expect(await take('AKexpiry', 15)).toEqual({ allowed: true, retryAfterMs: 0 });
    expect(await redis.pttl(key)).toBeGreaterThan(2800);
    expect(await redis.hget(key, 'tokens')).toBe('2');
  });
});

describe('rate limit charged by the cost of a batch', () => {
  const batchOf = (ccToken: string, listingsPerOrder: number[]) => ({
    orders: listingsPerOrder.map((n, i) => ({
      ...orderBody(ccToken, { dryrun: true }),
      requestId: `cost-${i}`,
      listings: Array.from({ length: n }, (_, l) => ({ listingId: 100_000 + l, quantity: 1 })),
    })),
  });

  it('when a batch of one order of 10 listings comes, then it costs one request: the burst has one more', async () => {
    const client = await service.client('light batch client');
    const res = await signed(app, client, 'POST', '/v1/order-batches', batchOf(client.ccToken, [10]));
    expect(statusOf(res)).toBe('2004');
    expect(statusOf(await signed(app, client, 'GET', '/v1/orders/1'))).toBe('4041');
    expect(statusOf(await signed(app, client, 'GET', '/v1/orders/1'))).toBe('4291');
  });

  it('when a batch of one order of 11 listings comes, then it costs two: the burst is spent', async () => {
    const client = await service.client('listings batch client');
    const res = await signed(app, client, 'POST', '/v1/order-batches', batchOf(client.ccToken, [11]));
    expect(statusOf(res)).toBe('2004');
    expect(statusOf(await signed(app, client, 'GET', '/v1/orders/1'))).toBe('4291');
  });

  it('when a batch costs more than the burst, then it passes on a full bucket and the key waits out its debt', async () => {
    const client = await service.client('heavy batch client');
    // Five orders of 30 listings: 15 requests' worth, against a burst of 2 and 1 a second.
    const res = await signed(
      app,
      client,
      'POST',
      '/v1/order-batches',
      batchOf(client.ccToken, Array(5).fill(30)),
    );
    expect(statusOf(res)).toBe('2004');
    const next = await signed(app, client, 'GET', '/v1/orders/1');
    expect(statusOf(next)).toBe('4291');
    expect(next.headers['retry-after']).toBe('14');
    const again = await signed(app, client, 'POST', '/v1/order-batches', batchOf(client.ccToken, [30]));
    expect(statusOf(again)).toBe('4291');
    now += 14_000;
    expect(statusOf(await signed(app, client, 'GET', '/v1/orders/1'))).toBe('4041');
  });

  it('when a real order of 5 items comes, alone or in a batch, then it costs 5 requests, as 5 orders of one item would', async () => {
    const realOf = (ccToken: string, quantity: number) => ({
      ...orderBody(ccToken),
      listings: [{ listingId: 100_000, quantity }],
    });
    for (const send of [
      (c: Credentials) => signed(app, c, 'POST', '/v1/orders', realOf(c.ccToken, 5)),
      (c: Credentials) =>
        signed(app, c, 'POST', '/v1/order-batches', {
          orders: [{ ...realOf(c.ccToken, 5), requestId: 'r' }],
        }),
    ]) {
      const client = await service.client('items client');
      // Charged before it is checked: an unknown listing is refused (4220), but its items are paid for.
      expect(statusOf(await send(client))).not.toBe('4291');
      const next = await signed(app, client, 'GET', '/v1/orders/1');
      expect(statusOf(next)).toBe('4291');
      // A burst of 2 and 1 a second: 5 taken from 2 leaves a debt of 3, and one more is needed.
      expect(next.headers['retry-after']).toBe('4');
    }
    // The same order as a dry run costs one: the burst has one more.
    const light = await service.client('dry-run items client');
    await signed(app, light, 'POST', '/v1/orders', { ...realOf(light.ccToken, 5), dryrun: true });
    expect(statusOf(await signed(app, light, 'GET', '/v1/orders/1'))).toBe('4041');
  });

  it('when a batch costs more than the bucket holds now, then it is refused whole 4291, naming its cost', async () => {
    const client = await service.client('refused batch client');
    await signed(app, client, 'GET', '/v1/orders/1');
    const res = await signed(app, client, 'POST', '/v1/order-batches', batchOf(client.ccToken, [5, 5]));
    expect(statusOf(res)).toBe('4291');
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body.messages).toEqual([
      'Svc-Access-Key: this batch costs 2 requests (one per item of a real order, one per 10 listings of a dry run, at least one per order), more than 1 requests per second allow now; retry after 1 s',
    ]);
  });
});

describe('rate limit of an order taken whole once its body is read', () => {
  // A listing that does not exist: each order is charged, then refused 4220 (nothing stored, no worker needed).
  const ofItems = (ccToken: string, ...quantities: number[]) => ({
    ...orderBody(ccToken),
    listings: quantities.map((quantity, i) => ({ listingId: 200_000 + i, quantity })),
  });

  it('when a key sends orders of 3 items, then the burst takes 3 of them and the 4th is 4291 naming its cost, until all of it is there', async () => {
    // Five a second, a burst of ten: three orders of 3 items leave one token.
    const app5 = createWebApp({ ...service.deps, config: { ...service.deps.config, RATE_LIMIT_PER_S: 5 } });
    const client = await service.client('three-item client');
    const evalsha = vi.spyOn(service.deps.redis, 'evalsha');
    const asked = () =>
      evalsha.mock.calls.filter((call) => call.some((arg) => String(arg).endsWith(client.accessKey))).length;
    try {
      const order = () => signed(app5, client, 'POST', '/v1/orders', ofItems(client.ccToken, 2, 1));
      const answers = [];
      for (let i = 0; i < 4; i++) answers.push(await order());
      expect(answers.map(statusOf)).toEqual(['4220', '4220', '4220', '4291']);
      // One take of its whole cost per order: one call of the script each.
      expect(asked()).toBe(4);
      const refused = answers[3]!;
      expect(refused.status).toBe(429);
      // 3 tokens wanted, 1 there, 5 a second: 0.4 s.
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.body.messages).toEqual([
        'Svc-Access-Key: this order costs 3 requests (one per item of a real order, one per 10 listings of a dry run, at least one per order), more than 5 requests per second allow now; retry after 1 s',
      ]);
      // Refused whole, it took nothing: the last token is still there for a request of one.
      expect(statusOf(await signed(app5, client, 'GET', '/v1/orders/1'))).toBe('4041');
      // Once Retry-After has passed, the whole cost of the next order is there.
      now += 1000;
      expect(statusOf(await order())).toBe('4220');
    } finally {
      evalsha.mockRestore();
    }
  });

  it('when an order body is malformed, then it costs one token, and its error is answered', async () => {
    const client = await service.client('malformed order client');
    const malformed = await signed(app, client, 'POST', '/v1/orders', '{"listings": [');
    expect(malformed.status).toBe(400);
    expect(statusOf(malformed)).toBe('4003');
    // A burst of 2: one token left, then none.
    expect(statusOf(await signed(app, client, 'GET', '/v1/orders/1'))).toBe('4041');
    expect(statusOf(await signed(app, client, 'GET', '/v1/orders/1'))).toBe('4291');
  });

  it('when the bucket is empty, then a malformed order or batch is 4291 with Retry-After before its own error', async () => {
    const client = await service.client('empty bucket client');
    await signed(app, client, 'GET', '/v1/orders/1');
    await signed(app, client, 'GET', '/v1/orders/1');
    for (const path of ['/v1/orders', '/v1/order-batches']) {
      const res = await signed(app, client, 'POST', path, '[not json');
      expect(res.status).toBe(429);
      expect(statusOf(res)).toBe('4291');
      expect(res.headers['retry-after']).toBe('1');
      expect(res.body.messages[0]).toMatch(/^Svc-Access-Key: more than 1 requests per second/);
    }
    // Its wait over, the same body is answered with its own error.
    now += 1000;
    expect(statusOf(await signed(app, client, 'POST', '/v1/orders', '[not json'))).toBe('4003');
  });
});

describe('rate limit charged by what a read returns', () => {
  const DAY = 86_400_000;
  let reader: Credentials;
  let orderIds: number[];

  beforeAll(async () => {
    await service.importCatalog(VENDORS, LISTINGS);
    reader = await service.client('reader of large orders');
    await storeHeavyClient(service, reader, { listing: LISTINGS[0]!, t0: now - DAY, orders: 5, items: 250 });
    // Priced as bought, so that the answers are ones the OpenAPI document describes (a cost above 0).
    await service.probe.exec(`UPDATE order_items SET cost_cents = 1250 WHERE client_id = ${reader.clientId}`);
    orderIds = (
      await service.probe.all<{ order_id: number }>(
        'SELECT order_id FROM orders WHERE client_id = ? ORDER BY order_id',
        reader.clientId,
      )
    ).map((row) => Number(row.order_id));
  });

  it('when a client gets an order of 250 items, then it costs 25 requests (one per 10 items): the key waits out its debt', async () => {
    const got = await signed(app, reader, 'GET', `/v1/orders/${orderIds[0]}`);
    expect(statusOf(got)).toBe('2000');
    const next = await signed(app, reader, 'GET', '/v1/orders/1');
    expect(statusOf(next)).toBe('4291');
    // A burst of 2 and 1 a second: 25 taken from 2 leaves a debt of 23, and one more is needed.
    expect(next.headers['retry-after']).toBe('24');
    // Its debt paid and the burst back: a full bucket for the next test.
    now += 25_000;
  });

  it('when a client asks for 100 orders of 250 items, then the page ends at 250 items, costs 25, and the next page goes on', async () => {
    type Page = { orders: { orderId: number }[]; metadata: { orderResponseSize: number; next?: number } };
    const first = await signed(app, reader, 'GET', '/v1/orders?limit=100');
    expect(statusOf(first)).toBe('2000');
    const page = first.body as Page;
    expect(page.orders.map((o) => o.orderId)).toEqual(orderIds.slice(0, 1));
    expect(page.metadata.orderResponseSize).toBe(1);
    expect(page.metadata.next).toBeDefined();
    const refused = await signed(app, reader, 'GET', `/v1/orders?limit=100&next=${page.metadata.next}`);
    expect(statusOf(refused)).toBe('4291');
    // 25 taken from 2: a debt of 23, and one more.
    expect(refused.headers['retry-after']).toBe('24');
    now += 24_000;
    const second = await signed(app, reader, 'GET', `/v1/orders?limit=100&next=${page.metadata.next}`);
    expect(statusOf(second)).toBe('2000');
    expect((second.body as Page).orders.map((o) => o.orderId)).toEqual(orderIds.slice(1, 2));
    expect((second.body as Page).metadata.next).toBeDefined();
    now += 25_000;
  });

  it('when a search returns 10 items or fewer, then it costs one request, as before', async () => {
    const client = await service.client('light reader');
    expect(statusOf(await signed(app, client, 'GET', '/v1/orders?limit=100'))).toBe('2000');
    expect(statusOf(await signed(app, client, 'GET', '/v1/orders/1'))).toBe('4041');
    expect(statusOf(await signed(app, client, 'GET', '/v1/orders/1'))).toBe('4291');
  });
});

describe('rate limit across two web processes', () => {
  it('when one key alternates between two web processes, then together they allow one burst, not one each', async () => {
    const client = await service.client('two-door client');
    const env = { RATE_LIMIT_PER_S: '3' }; // burst 6
    const ports = [await freePort(), await freePort()];
    await Promise.all(
      ports.map((port) => service.spawn('src/server.ts', { ...env, PORT: String(port) }, 'web listening')),
    );
    const doors = ports.map((port) =>
      createSigningClient({ baseUrl: `http://127.0.0.1:${port}`, ...client }),
    );
    const warm = [];
    for (const port of ports) {
      warm.push(
        createSigningClient({ baseUrl: `http://127.0.0.1:${port}`, ...(await service.client('warm-up')) }),
      );
    }
    for (const door of warm) expect((await door.getOrder(1)).svcStatus).toEqual([4041]);
    const seen: { door: number; codes: number[] }[] = [];
    const started = Date.now();
    for (let i = 0; i < 12; i++) {
      const res = await doors[i % 2]!.getOrder(999_999);
      seen.push({ door: i % 2, codes: res.svcStatus });
    }
    const allowed = seen.filter((s) => s.codes[0] === 4041);
    const refused = seen.filter((s) => s.codes[0] === 4291);
    // 6 from the burst, and one more for every third of a second the loop took.
    const refill = Math.floor(((Date.now() - started) / 1000) * 3);
    expect(allowed.length).toBeGreaterThanOrEqual(6);
    expect(allowed.length).toBeLessThanOrEqual(6 + refill);
    expect(allowed.length).toBeLessThan(12);
    expect(allowed.length + refused.length).toBe(12);
    expect(new Set(refused.map((s) => s.door))).toEqual(new Set([0, 1]));
  });
});
