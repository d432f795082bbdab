import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endedAnswerOf, endedJobOf, orderEndsChannel } from '../../src/queue/order-outcomes.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';

let service: TestService;
let buyer: Credentials;

const statuses = (body: { listings: { orderItems: { status: number }[] }[] }) =>
  body.listings.flatMap((l) => l.orderItems.map((i) => i.status));

const ledger = (orderId: number) =>
  service.probe.all(
    'SELECT kind, amount_cents AS amount FROM ledger_entries WHERE order_id = ? ORDER BY entry_id',
    orderId,
  );

beforeAll(async () => {
  service = await createTestService();
  await service.importCatalog(VENDORS, LISTINGS);
  buyer = await service.client('real buyer');
  await service.startWorker();
});
afterAll(() => service.close());

describe('POST /v1/orders for a real order', () => {
  it('when a worker runs, then the order comes back ORDERED, stock is taken and one authorisation is recorded', async () => {
    // Walden 10.00 ×2 + shipping 3.99 + 1.99 = 25.98; CA 7.25 % -> 1.88; total 27.86
    const res = await signed(
      service.app,
      buyer,
      'POST',
      '/v1/orders',
      orderBody(buyer.ccToken, { listings: [{ listingId: 2002, quantity: 2 }], referenceId: 'po-1' }),
    );
    expect(res.status).toBe(200);
    expect(res.headers['svc-status']).toBe('2010');
    expect(res.body.orderId).toBeGreaterThan(0);
    expect(res.body).toMatchObject({
      dryrun: false,
      currency: 'USD',
      tax: 1.88,
      taxModel: 'SALES_TAX',
      referenceId: 'po-1',
    });
    expect(statuses(res.body)).toEqual([5, 5]);
    expect(res.body.listings[0].orderItems[0]).not.toHaveProperty('itemUpdateDate');
    expect(
      res.body.listings[0].orderItems
        .map((i: { orderItemId: number }) => i.orderItemId)
        .every((id: number) => id > 0),
    ).toBe(true);
    expect(await service.stock(2002)).toBe(48);
    expect(await ledger(res.body.orderId)).toEqual([{ kind: 'authorize', amount: 2786 }]);
  });

  it('when the card declines, then every item is 19 and the stock is untouched', async () => {
    const decliner = await service.client('declined buyer', true);
    const before = await service.stock(2001);
    const res = await signed(
      service.app,
      decliner,
      'POST',
      '/v1/orders',
      orderBody(decliner.ccToken, { listings: [{ listingId: 2001, quantity: 2 }] }),
    );
    expect(res.headers['svc-status']).toBe('2010');
    expect(statuses(res.body)).toEqual([19, 19]);
    expect(res.body.listings[0].orderItems[0].shipcost).toBe(0);
    expect(await service.stock(2001)).toBe(before);
    expect(await ledger(res.body.orderId)).toEqual([{ kind: 'decline', amount: expect.any(Number) }]);
  });

  it('when the same request is sent again, then it returns the same order; a different body is 4090', async () => {
    const body = orderBody(buyer.ccToken, { listings: [{ listingId: 1002, quantity: 1 }] });
    const requestId = crypto.randomUUID();
    const first = await signed(service.app, buyer, 'POST', '/v1/orders', body, { requestId });
    const again = await signed(service.app, buyer, 'POST', '/v1/orders', body, { requestId });
    expect(again.status).toBe(200);
    expect(again.headers['svc-status']).toBe('2010');
    expect(again.body.orderId).toBe(first.body.orderId);
    const other = await signed(
      service.app,
      buyer,
      'POST',
      '/v1/orders',
      { ...body, referenceId: 'changed' },
      { requestId },
    );
    expect(other.status).toBe(409);
    expect(other.headers['svc-status']).toBe('4090');
    expect(other.body.requestId).toBe(requestId);
    const count = await service.probe.scalar('SELECT count(*) FROM orders WHERE request_id = ?', requestId);
    expect(count).toBe(1);
  });

  it('when twenty identical requests arrive at once, then exactly one order is created', async () => {
    const body = orderBody(buyer.ccToken, { listings: [{ listingId: 1002, quantity: 1 }] });
    const requestId = crypto.randomUUID();
    const before = await service.stock(1002);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => signed(service.app, buyer, 'POST', '/v1/orders', body, { requestId })),
    );
    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([200]));
    expect(new Set(answers.map((a) => a.body.orderId)).size).toBe(1);
    const codes = answers.map((a) => a.headers['svc-status']);
    expect(codes.every((c) => c === '2010' || c === '2003')).toBe(true);
    expect(await service.probe.scalar('SELECT count(*) FROM orders WHERE request_id = ?', requestId)).toBe(1);
    expect(await service.stock(1002)).toBe(before - 1);
  });

  it('when distinct orders, repeats and a conflicting body arrive at once, then each gets its own answer', async () => {
    // Accepted together, these share transactions (group commit): no answer may leak into another's.
    const one = (listingId: number) => orderBody(buyer.ccToken, { listings: [{ listingId, quantity: 1 }] });
    const distinct = Array.from({ length: 12 }, () => crypto.randomUUID());
    const repeated = crypto.randomUUID();
    const async = { headers: { Prefer: 'respond-async' } };
    const answers = await Promise.all([
      ...distinct.map((requestId) =>
        signed(service.app, buyer, 'POST', '/v1/orders', one(1002), { ...async, requestId }),
      ),
      ...Array.from({ length: 3 }, () =>
        signed(service.app, buyer, 'POST', '/v1/orders', one(1002), { ...async, requestId: repeated }),
      ),
      signed(service.app, buyer, 'POST', '/v1/orders', one(1001), { ...async, requestId: repeated }),
    ]);
    const distinctAnswers = answers.slice(0, 12);
    expect(distinctAnswers.map((a) => a.headers['svc-status'])).toEqual(Array(12).fill('2010'));
    expect(new Set(distinctAnswers.map((a) => a.body.orderId)).size).toBe(12);
    const repeats = answers.slice(12, 15);
    const conflicting = answers[15]!;
    const stored = await service.probe.scalar<number>(
      'SELECT order_id FROM orders WHERE client_id = ? AND request_id = ?',
      buyer.clientId,
      repeated,
    );
    // Whichever body came first is the stored one; every other answer for that request id says so.
    const storedBody = await service.probe.scalar<string>(
      'SELECT listing_id FROM order_items WHERE order_id = ?',
      stored,
    );
    const winners = [...repeats, conflicting].filter((a) => a.headers['svc-status'] === '2010');
    // A repeat answered once the worker has settled the order is 2010 as well (2003 only while it waits): however
    // many say 2010, they name the one stored order.
    expect(winners.length).toBeGreaterThan(0);
    expect(new Set(winners.map((a) => a.body.orderId))).toEqual(new Set([stored]));
    for (const answer of [...repeats, conflicting].filter((a) => a !== winners[0])) {
      const sameBody = answer === conflicting ? Number(storedBody) === 1001 : Number(storedBody) === 1002;
      if (sameBody) {
        expect(['2003', '2010']).toContain(answer.headers['svc-status']);
        expect(answer.body.orderId).toBe(stored);
      } else expect(answer.headers['svc-status']).toBe('4090');
    }
    expect(
      await service.probe.scalar(
        'SELECT count(*) FROM orders WHERE client_id = ? AND request_id IN (?, ?)',
        buyer.clientId,
        repeated,
        distinct[0],
      ),
    ).toBe(2);
  });
});

type Answer = { listings: { orderItems: Record<string, unknown>[] }[] };

/** An order as GET answers it, less the items' update dates, which the answer to its placing leaves out. */
const withoutItemDates = (order: Answer) => ({
  ...order,
  listings: order.listings.map((listing) => ({
    ...listing,
    orderItems: listing.orderItems.map(({ itemUpdateDate: _, ...item }) => item),
  })),
});

describe('the answer a waiting caller gets', () => {
  it('is the order as a GET then shows it, as the worker that settled it announced it: bought, over its max price, declined, nothing bought', async () => {
    const buying = await service.client('bought answers');
    const declining = await service.client('declining answers', true);
    const heard = new Redis(service.env.REDIS_URL);
    const ends = new Map<string, string | undefined>();
    heard.on('message', (_: string, message: string) =>
      ends.set(endedJobOf(message), endedAnswerOf(message)),
    );
    await heard.subscribe(orderEndsChannel(service.config.REDIS_PREFIX));
    const orders = [
      // Walden bought twice, 2001 over its max price (53): the figures the worker priced, its tax and statuses.
      [
        buying,
        [
          { listingId: 2002, quantity: 2 },
          { listingId: 2001, quantity: 1, maxPrice: 1 },
        ],
      ],
      [
        declining,
        [
          { listingId: 2002, quantity: 1 },
          { listingId: 2001, quantity: 1, maxPrice: 1 },
        ],
      ],
      // Nothing bought: the reservation settles the order, and nothing is paid.
      [buying, [{ listingId: 2001, quantity: 2, maxPrice: 1 }]],
    ] satisfies [Credentials, { listingId: number; quantity: number; maxPrice?: number }[]][];
    const seen: number[][] = [];
    for (const [who, listings] of orders) {
      const placed = await signed(
        service.app,
        who,
        'POST',
        '/v1/orders',
        orderBody(who.ccToken, { listings }),
      );
      expect(placed.headers['svc-status']).toBe('2010');
      const got = await signed(service.app, who, 'GET', `/v1/orders/${placed.body.orderId}`);
      expect(placed.body).toEqual(withoutItemDates(got.body));
      seen.push(statuses(placed.body));
      await expect.poll(() => ends.has(`order-${placed.body.orderId}`)).toBe(true);
      expect(JSON.parse(ends.get(`order-${placed.body.orderId}`)!)).toEqual(placed.body);
    }
    expect(seen).toEqual([
      [5, 5, 53],
      [19, 53],
      [53, 53],
    ]);
    heard.disconnect();
  });
});

describe('POST /v1/orders with Prefer: respond-async', () => {
  it('then it answers at once with the order QUEUED, before any worker has run', async () => {
    // No worker runs on this service, so QUEUED is what the client must see.
    const idle = await createTestService();
    await idle.importCatalog(VENDORS, LISTINGS);
    const client = await idle.client('async buyer');
    const res = await signed(idle.app, client, 'POST', '/v1/orders', orderBody(client.ccToken), {
      headers: { Prefer: 'respond-async' },
    });
    expect(res.headers['svc-status']).toBe('2010');
    expect(res.headers['preference-applied']).toBe('respond-async');
    expect(statuses(res.body)).toEqual([1]);
    expect(res.body.listings[0].orderItems[0]).toMatchObject({ cost: 10, shipcost: 0 });
    await idle.close();
  });
});
