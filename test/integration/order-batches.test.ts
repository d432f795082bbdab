import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orderJobId } from '../../src/queue/order.queue.js';
import { entry, itemStatuses, postBatch, resultsOf, statusesOf } from '../helpers/batches.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';
import { until } from '../helpers/wait.js';

let service: TestService;
let buyer: Credentials;

const ordersStored = () => service.probe.scalar<number>('SELECT count(*) FROM orders');
const uniqueId = (label: string) => `${label}-${crypto.randomUUID().slice(0, 8)}`;

// No worker runs on this service: every real order stays QUEUED, as a client of a batch first sees it.
beforeAll(async () => {
  service = await createTestService();
  await service.importCatalog(VENDORS, LISTINGS);
  buyer = await service.client('bulk buyer');
});
afterAll(() => service.close());

describe('POST /v1/order-batches with mixed entries', () => {
  it('answers each entry as it would be answered alone, in request order, with 2004', async () => {
    const earlier = entry(uniqueId('earlier'), buyer.ccToken, {
      listings: [{ listingId: 1002, quantity: 1 }],
    });
    const other = entry(uniqueId('other'), buyer.ccToken);
    const first = await postBatch(service, buyer, [earlier, other]);
    const earlierOrderId = resultsOf(first)[0]!.order!.orderId;
    const before = await ordersStored();

    const real = entry(uniqueId('real'), buyer.ccToken, { listings: [{ listingId: 2002, quantity: 2 }] });
    const orders: unknown[] = [
      real,
      entry(uniqueId('dry'), buyer.ccToken, { dryrun: true, listings: [{ listingId: 2002, quantity: 2 }] }),
      entry(uniqueId('bad'), buyer.ccToken, { listings: [{ listingId: 2002, quantity: 0 }], coupon: 'FREE' }),
      { ...real, referenceId: 'another-content' },
      earlier,
      { ...other, referenceId: 'changed' },
      entry(uniqueId('card'), 'cc_not_a_card'),
      42,
      { ...entry('x', buyer.ccToken), requestId: undefined },
      entry('r'.repeat(37), buyer.ccToken),
    ];
    const res = await postBatch(service, buyer, orders);

    expect(res.status).toBe(200);
    expect(res.headers['svc-status']).toBe('2004');
    expect(res.headers['retry-after']).toBeUndefined();
    expect(statusesOf(res)).toEqual([
      [2010],
      [2002],
      [4002, 4220],
      [4220],
      [2003],
      [4090],
      [4001],
      [4000],
      [4220],
      [4220],
    ]);
    const results = resultsOf(res);
    expect(results.map((r) => r.requestId)).toEqual([
      real.requestId,
      (orders[1] as { requestId: string }).requestId,
      (orders[2] as { requestId: string }).requestId,
      real.requestId,
      earlier.requestId,
      other.requestId,
      (orders[6] as { requestId: string }).requestId,
      '',
      '',
      'r'.repeat(37),
    ]);
    expect(itemStatuses(results[0]!)).toEqual([1, 1]);
    expect(results[0]).not.toHaveProperty('messages');
    expect(results[1]!.order).toMatchObject({ orderId: 0, dryrun: true, tax: 1.88 });
    expect(results[2]!.messages).toEqual([
      'listings[0].quantity: must be an integer from 1 to 250',
      expect.stringMatching(/coupon/),
    ]);
    expect(results[3]!.messages).toEqual([
      `requestId: appears more than once in the batch (first at orders[0])`,
    ]);
    expect(results[4]!.order!.orderId).toBe(earlierOrderId);
    expect(results[5]!.messages).toEqual([
      'requestId: already used by this access key for a different request',
    ]);
    expect(results[6]!.messages).toEqual(['ccToken: not an active card of this client']);
    expect(results[8]!.messages).toEqual([expect.stringMatching(/^requestId: /)]);
    expect(results[9]!.messages).toEqual(['requestId: must be 1 to 36 characters']);
    for (const failed of [2, 3, 5, 6, 7, 8, 9]) expect(results[failed]!.order).toBeNull();

    // One new order, stored QUEUED and enqueued under its deterministic job id.
    expect(await ordersStored()).toBe(before + 1);
    const orderId = results[0]!.order!.orderId;
    expect(await service.deps.queue.queue.getJob(orderJobId(orderId))).toBeDefined();
    const got = await signed(service.app, buyer, 'GET', `/v1/orders/${orderId}`);
    expect(got.body.orderId).toBe(orderId);
  });

  it('when the same batch is sent again, even with its keys reordered, then it gives the same orders and creates nothing', async () => {
    const orders = [
      entry(uniqueId('a'), buyer.ccToken),
      entry(uniqueId('b'), buyer.ccToken, {
        listings: [{ listingId: 3001, quantity: 1 }],
        domain: 'bookmarket.de',
      }),
      entry(uniqueId('c'), buyer.ccToken, { dryrun: true }),
    ];
    const first = await postBatch(service, buyer, orders);
    expect(statusesOf(first)).toEqual([[2010], [2010], [2002]]);
    const count = await ordersStored();

    const reordered = orders.map((o) => Object.fromEntries(Object.entries(o).reverse()));
    const again = await postBatch(service, buyer, reordered);
    expect(statusesOf(again)).toEqual([[2003], [2003], [2002]]);
    expect(resultsOf(again).map((r) => r.order!.orderId)).toEqual(
      resultsOf(first).map((r) => r.order!.orderId),
    );
    expect(await ordersStored()).toBe(count);
  });

  it('answers entries whose orders the worker has settled with 2010 and their final statuses', async () => {
    const worker = await service.startWorker();
    const orders = [entry(uniqueId('s1'), buyer.ccToken), entry(uniqueId('s2'), buyer.ccToken)];
    const first = await postBatch(service, buyer, orders);
    const ids = resultsOf(first).map((r) => r.order!.orderId);
    await until(
      async () =>
        (await service.probe.scalar<number>(
          "SELECT count(*) FROM orders WHERE phase = 'settled' AND order_id IN (?, ?)",
          ...ids,
        )) === 2,
      15_000,
      'both orders settled',
    );
    const again = await postBatch(service, buyer, orders);
    expect(statusesOf(again)).toEqual([[2010], [2010]]);
    expect(resultsOf(again).map(itemStatuses)).toEqual([[5], [5]]);
    worker.kill('SIGTERM');
  });
});

describe('POST /v1/order-batches refused whole', () => {
  it('when it holds 501 orders, or none, then it is 4002 and nothing is stored', async () => {
    const before = await ordersStored();
    const many = Array.from({ length: 501 }, (_, i) => entry(`many-${i}`, buyer.ccToken));
    const tooMany = await postBatch(service, buyer, many);
    expect(tooMany.status).toBe(400);
    expect(tooMany.headers['svc-status']).toBe('4002');
    expect(tooMany.body.messages).toEqual(['orders: must have at most 500 orders']);
    const none = await postBatch(service, buyer, []);
    expect(none.headers['svc-status']).toBe('4002');
    expect(none.body.messages).toEqual(['orders: must have at least one order']);
    expect(await ordersStored()).toBe(before);
  });

  it('when its body is not JSON, not an object, or has no orders array, then it fails as any request does', async () => {
    const cases: [string, string][] = [
      ['{"orders": [', '4003'],
      ['[]', '4000'],
      ['{"orders": {}}', '4220'],
      ['{"orders": [], "extra": 1}', '4002, 4220'],
      ['{}', '4220'],
    ];
    for (const [body, status] of cases) {
      const res = await postBatch(service, buyer, body);
      expect(res.headers['svc-status'], body).toBe(status);
      expect(res.body.requestId).toEqual(expect.any(String));
    }
    const wrongType = await postBatch(service, buyer, '{"orders": []}', { contentType: 'text/plain' });
    expect(wrongType.headers['svc-status']).toBe('4150');
    const unsigned = await postBatch(service, { ...buyer, secretKey: 'wrong' }, [entry('u', buyer.ccToken)]);
    expect(unsigned.headers['svc-status']).toBe('4010, 4017');
  });
});

describe('POST /v1/order-batches and the card-testing defence', () => {
  it('when entries carry invalid cards, then each counts as a single request would, and the lock refuses the rest with Retry-After', async () => {
    const tester = await service.client('card tester');
    const orders = [
      ...Array.from({ length: 10 }, (_, i) => entry(`bad-${i}`, `cc_guess_${i}`)),
      entry('good-after-lock', tester.ccToken),
    ];
    const res = await postBatch(service, tester, orders);
    expect(res.headers['svc-status']).toBe('2004');
    expect(statusesOf(res)).toEqual([...Array.from({ length: 10 }, () => [4001]), [4293]]);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    const dryRun = orderBody(tester.ccToken, { dryrun: true });
    const alone = await signed(service.app, tester, 'POST', '/v1/orders', dryRun);
    expect(alone.headers['svc-status']).toBe('4293');
  });
});
