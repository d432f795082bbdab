import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { US_ADDRESS } from '../helpers/fixtures.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';

const DAY = 86_400_000;
let now = Date.parse('2026-11-21T10:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

let service: TestService;
let alice: Credentials;
let bob: Credentials;

const search = (creds: Credentials, query: string) =>
  signed(service.app, creds, 'GET', `/v1/orders?${query}`, undefined, { date: iso(now) });

async function expectInvalid(creds: Credentials, query: string, messages: string[]) {
  const res = await search(creds, query);
  expect(res.status, query).toBe(422);
  expect(res.headers['svc-status']).toBe('4220');
  expect(res.body).toEqual({ requestId: res.headers['svc-requestid'], messages });
}

/** A cursor issued to `creds` for `query`: needs more orders than one page holds. */
async function cursorFor(creds: Credentials, query: string): Promise<number> {
  const res = await search(creds, `${query}&limit=1`);
  expect(res.body.metadata.next).toEqual(expect.any(Number));
  return res.body.metadata.next as number;
}

beforeAll(async () => {
  service = await createTestService({ clock: () => now });
  alice = await service.client('alice');
  bob = await service.client('bob');
  const cardId = (await service.deps.store.clients.findCard(alice.ccToken))!.cardId;
  for (let i = 0; i < 3; i++) {
    await service.deps.store.orders.accept({
      clientId: alice.clientId,
      requestId: `seed-${i}`,
      requestHash: 'seed',
      referenceId: null,
      domain: 'bookmarket.com',
      currency: 'USD',
      shippingMode: 'S',
      shipAddr: US_ADDRESS,
      billAddr: US_ADDRESS,
      cardId,
      totalMaxPriceCents: null,
      createdAt: now - (i + 1) * DAY,
      items: [],
    });
  }
});
afterAll(() => service.close());

describe('GET /v1/orders with a bad parameter answers 4220 naming it', () => {
  it.each([
    ['pageSize=10', 'pageSize: unknown query parameter'],
    ['limit=0', 'limit: must be an integer from 1 to 100'],
    ['limit=101', 'limit: must be an integer from 1 to 100'],
    ['limit=ten', 'limit: must be an integer from 1 to 100'],
    ['limit=10&limit=20', 'limit: given more than once; give it once'],
    ['sortOrder=newest', 'sortOrder: must be ascending or descending'],
    [
      'dateStart=2026-02-30',
      'dateStart: must be an ISO 8601 date or date-time, e.g. 2026-11-21 or 2026-11-21T10:00:00.123Z',
    ],
    [
      'dateEnd=now',
      'dateEnd: must be an ISO 8601 date or date-time, e.g. 2026-11-21 or 2026-11-21T10:00:00.123Z',
    ],
    [
      'itemUpdateDateStart=2026-11-21T25:00',
      'itemUpdateDateStart: must be an ISO 8601 date or date-time, e.g. 2026-11-21 or 2026-11-21T10:00:00.123Z',
    ],
    [
      'itemUpdateDateEnd=',
      'itemUpdateDateEnd: must be an ISO 8601 date or date-time, e.g. 2026-11-21 or 2026-11-21T10:00:00.123Z',
    ],
    ['dateStart=2026-01-01&dateEnd=2026-04-02', 'dateEnd: must be at most 90 days after dateStart'],
    ['dateStart=2026-03-01&dateEnd=2026-02-01', 'dateStart: must not be after dateEnd'],
    [
      'itemUpdateDateStart=2026-03-01&itemUpdateDateEnd=2026-02-01',
      'itemUpdateDateStart: must not be after itemUpdateDateEnd',
    ],
    ['vendorId=abc', 'vendorId: must be an integer'],
    ['referenceId=no%20spaces', 'referenceId: must be 1 to 64 letters, digits, - or _'],
    ['orderId=12&orderId=twelve', 'orderId[1]: must be an integer'],
    ['orderItemId=1.5', 'orderItemId[0]: must be an integer'],
    ['next=-4', 'next: must be the metadata.next of a previous response'],
  ])('%s', async (query, message) => {
    await expectInvalid(alice, query, [message]);
  });

  it('reports every problem of one request together', async () => {
    await expectInvalid(alice, 'dateStart=2026-05-01&dateEnd=2026-01-01&limit=0&orderId=x&foo=1&bar=2', [
      'orderId[0]: must be an integer',
      'limit: must be an integer from 1 to 100',
      'foo: unknown query parameter',
      'bar: unknown query parameter',
      'dateStart: must not be after dateEnd',
    ]);
  });

  it('accepts a span of exactly 90 days', async () => {
    const res = await search(alice, 'dateStart=2026-01-01&dateEnd=2026-04-01');
    expect(res.status).toBe(200);
  });
});

describe('GET /v1/orders with a next the service did not issue for this search', () => {
  const unknown =
    'next: not a cursor issued to this client for these criteria in the last 24 hours; repeat the criteria of the first page, or search again without it';

  it('refuses an integer it never issued', async () => {
    await expectInvalid(alice, 'next=123456789', [unknown]);
  });

  it('refuses another client’s cursor without telling it exists', async () => {
    const next = await cursorFor(alice, 'sortOrder=descending');
    await expectInvalid(bob, `sortOrder=descending&next=${next}`, [unknown]);
  });

  it('refuses a cursor with other criteria, the sort order included, but lets limit change', async () => {
    const next = await cursorFor(alice, 'sortOrder=ascending');
    await expectInvalid(alice, `sortOrder=descending&next=${next}`, [unknown]);
    await expectInvalid(alice, `sortOrder=ascending&vendorId=5&next=${next}`, [unknown]);
    const res = await search(alice, `sortOrder=ascending&limit=50&next=${next}`);
    expect(res.status).toBe(200);
    expect(res.body.metadata.orderResponseSize).toBe(2);
  });

  it('refuses a cursor altered in any of its bits, and none of them opens another page', async () => {
    const next = await cursorFor(alice, 'sortOrder=descending');
    for (let bit = 0; bit < 52; bit++) {
      const altered = next - 1 + (Math.floor((next - 1) / 2 ** bit) % 2 === 0 ? 2 ** bit : -(2 ** bit)) + 1;
      const res = await search(alice, `sortOrder=descending&next=${altered}`);
      expect(res.status, `bit ${bit}`).toBe(422);
    }
  });

  it('stores nothing per page: the cursor is the integer itself', async () => {
    const before = await service.probe.scalar('SELECT count(*) FROM search_cursors');
    for (const sortOrder of ['ascending', 'descending']) await cursorFor(alice, `sortOrder=${sortOrder}`);
    const next = await cursorFor(alice, 'sortOrder=descending');
    const res = await search(alice, `sortOrder=descending&limit=1&next=${next}`);
    expect(res.body.metadata).toEqual({ orderResponseSize: 1, next: expect.any(Number) });
    expect(await service.probe.scalar('SELECT count(*) FROM search_cursors')).toBe(before);
  });

  it('refuses a cursor older than 24 hours', async () => {
    const next = await cursorFor(alice, 'dateStart=2026-11-01');
    now += DAY + 1;
    try {
      await expectInvalid(alice, `dateStart=2026-11-01&next=${next}`, [unknown]);
    } finally {
      now -= DAY + 1;
    }
  });
});
