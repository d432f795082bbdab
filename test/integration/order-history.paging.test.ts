import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LISTINGS, US_ADDRESS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';

const DAY = 86_400_000;
const START = Date.parse('2026-11-21T10:00:00.000Z');
let now = START;
const iso = (ms: number) => new Date(ms).toISOString();

let service: TestService;
let requests = 0;

interface Listed {
  orderId: number;
  createDate: string;
}
interface Page {
  orders: Listed[];
  metadata: { orderResponseSize: number; next?: number };
}

/** Stores a one-item order at a chosen time, as acceptance would. */
async function seed(creds: Credentials, createdAt: number): Promise<number> {
  const card = await service.deps.store.clients.findCard(creds.ccToken);
  const accepted = await service.deps.store.orders.accept({
    clientId: creds.clientId,
    requestId: `seed-${++requests}`,
    requestHash: 'seed',
    referenceId: null,
    domain: 'bookmarket.com',
    currency: 'USD',
    shippingMode: 'S',
    shipAddr: US_ADDRESS,
    billAddr: US_ADDRESS,
    cardId: card!.cardId,
    totalMaxPriceCents: null,
    createdAt,
    items: [
      {
        lineNo: 0,
        listingId: 2002,
        vendorId: 601,
        title: 'Walden',
        isbn: '9780691096124',
        lineQuantity: 1,
        maxPriceCents: null,
        minDays: 3,
        maxDays: 7,
        costCents: 1000,
      },
    ],
  });
  if (accepted.kind !== 'created') throw new Error('seed order not created');
  return accepted.orderId;
}

async function page(creds: Credentials, query: string): Promise<Page> {
  const res = await signed(service.app, creds, 'GET', `/v1/orders?${query}`, undefined, { date: iso(now) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const body = res.body as Page;
  expect(body.metadata.orderResponseSize).toBe(body.orders.length);
  return body;
}

/** Pages to the end, calling `between` after each page; returns the pages. */
async function pageThrough(creds: Credentials, query: string, between: (last: Listed) => Promise<void>) {
  const pages: Page[] = [];
  let next: number | undefined;
  do {
    const body = await page(creds, next === undefined ? query : `${query}&next=${next}`);
    pages.push(body);
    next = body.metadata.next;
    const last = body.orders.at(-1);
    if (last) await between(last);
  } while (next !== undefined && pages.length < 100);
  return pages;
}

const key = (o: Listed): [number, number] => [Date.parse(o.createDate), o.orderId];
const compare = (a: Listed, b: Listed) => key(a)[0] - key(b)[0] || key(a)[1] - key(b)[1];

beforeAll(async () => {
  service = await createTestService({ clock: () => now });
  await service.importCatalog(VENDORS, LISTINGS);
});
afterAll(() => service.close());

describe('paging through GET /v1/orders while new orders arrive', () => {
  it.each(['ascending', 'descending'] as const)(
    '%s: every order that existed is listed once, in order, to the end',
    async (sortOrder) => {
      const creds = await service.client(`pager ${sortOrder}`);
      const existing = new Set<number>();
      for (let i = 0; i < 30; i++) {
        // Every third order shares its creation time with the one before: orderId breaks the tie.
        const at = START - 80 * DAY + Math.floor(i / 3) * 2 * DAY + (i % 3 === 2 ? 7 * 3_600_000 : 0);
        existing.add(await seed(creds, at));
      }
      const pages = await pageThrough(creds, `sortOrder=${sortOrder}&limit=4`, async (last) => {
        const at = Date.parse(last.createDate);
        // Behind the cursor, tied with it, ahead of it, and at the newest end of the window.
        await seed(creds, sortOrder === 'ascending' ? at - 1 : at + 1);
        await seed(creds, at);
        await seed(creds, sortOrder === 'ascending' ? at + DAY : at - DAY);
        await seed(creds, now);
      });

      const listed = pages.flatMap((p) => p.orders);
      expect(new Set(listed.map((o) => o.orderId)).size).toBe(listed.length);
      for (const id of existing) expect(listed.map((o) => o.orderId)).toContain(id);
      const sorted = [...listed].sort(sortOrder === 'ascending' ? compare : (a, b) => compare(b, a));
      expect(listed).toEqual(sorted);
      pages
        .slice(0, -1)
        .forEach((p) => expect(p.metadata).toEqual({ orderResponseSize: 4, next: expect.any(Number) }));
      expect(pages.at(-1)!.metadata).not.toHaveProperty('next');
    },
  );

  it('keeps the default window of the first page while the clock moves on', async () => {
    const creds = await service.client('slow pager');
    const oldest = await seed(creds, START - 89 * DAY);
    const middle = await seed(creds, START - 45 * DAY);
    const newest = await seed(creds, START - DAY);
    const listed: number[] = [];
    try {
      // 20 h between pages: by the last one, a window resolved afresh would no longer reach the oldest.
      const pages = await pageThrough(creds, 'sortOrder=descending&limit=1', async () => {
        now += 20 * 3_600_000;
      });
      listed.push(...pages.flatMap((p) => p.orders.map((o) => o.orderId)));
    } finally {
      now = START;
    }
    expect(listed).toEqual([newest, middle, oldest]);
  });
});

describe('metadata.next', () => {
  it('is present exactly when more orders match', async () => {
    const creds = await service.client('exact pager');
    for (let i = 0; i < 8; i++) await seed(creds, START - (i + 1) * DAY);
    const byFour = await pageThrough(creds, 'limit=4', async () => undefined);
    expect(byFour.map((p) => [p.metadata.orderResponseSize, 'next' in p.metadata])).toEqual([
      [4, true],
      [4, false],
    ]);
    const all = await page(creds, 'limit=8');
    expect(all.metadata).toEqual({ orderResponseSize: 8 });
    const bySeven = await pageThrough(creds, 'limit=7', async () => undefined);
    expect(bySeven.map((p) => p.metadata.orderResponseSize)).toEqual([7, 1]);
    expect(await page(creds, '')).toMatchObject({ metadata: { orderResponseSize: 8 } });
  });

  it('is absent on an empty result', async () => {
    const creds = await service.client('no orders yet');
    expect(await page(creds, 'limit=1')).toEqual({ orders: [], metadata: { orderResponseSize: 0 } });
  });
});

describe('an order placed a moment ago', () => {
  it('is found by the default search and by its id', async () => {
    const creds = await service.client('fresh buyer');
    const placed = await signed(
      service.app,
      creds,
      'POST',
      '/v1/orders',
      orderBody(creds.ccToken, { referenceId: 'fresh-1' }),
      { date: iso(now), headers: { Prefer: 'respond-async' } },
    );
    expect(placed.status).toBe(200);
    const orderId = placed.body.orderId as number;
    const found = await page(creds, '');
    expect(found.orders.map((o) => o.orderId)).toEqual([orderId]);
    expect(found.orders[0]).toMatchObject({ createDate: iso(now), referenceId: 'fresh-1' });
    const byRef = await page(creds, 'referenceId=fresh-1');
    expect(byRef.orders.map((o) => o.orderId)).toEqual([orderId]);
  });
});
