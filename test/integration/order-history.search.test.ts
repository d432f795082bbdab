import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NewOrderItem } from '../../src/store/port/store.port.js';
import { US_ADDRESS } from '../helpers/fixtures.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-21T10:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const q = encodeURIComponent;

interface Line {
  listingId: number;
  vendorId: number;
  quantity: number;
}
interface Seeded {
  orderId: number;
  createdAt: number;
  itemIds: number[];
}

let service: TestService;
let alice: Credentials;
let bob: Credentials;
let requests = 0;

/** Stores an order as acceptance does, at a chosen time, bypassing pricing. */
async function seed(
  creds: Credentials,
  createdAt: number,
  lines: Line[],
  referenceId?: string,
): Promise<Seeded> {
  const items: NewOrderItem[] = lines.flatMap((line, lineNo) =>
    Array.from({ length: line.quantity }, () => ({
      lineNo,
      listingId: line.listingId,
      vendorId: line.vendorId,
      title: `Book ${line.listingId}`,
      isbn: `978000000${line.listingId}`,
      lineQuantity: line.quantity,
      maxPriceCents: null,
      minDays: 2,
      maxDays: 5,
      costCents: 1000,
    })),
  );
  const card = await service.deps.store.clients.findCard(creds.ccToken);
  const accepted = await service.deps.store.orders.accept({
    clientId: creds.clientId,
    requestId: `seed-${++requests}`,
    requestHash: 'seed',
    referenceId: referenceId ?? null,
    domain: 'bookmarket.com',
    currency: 'USD',
    shippingMode: 'S',
    shipAddr: US_ADDRESS,
    billAddr: US_ADDRESS,
    cardId: card!.cardId,
    totalMaxPriceCents: null,
    createdAt,
    items,
  });
  if (accepted.kind !== 'created') throw new Error('seed order not created');
  // Acceptance leaves shipping to pricing; these items carry it as a priced order's would.
  // RETURNING makes the UPDATE a statement with rows, which the SQLite probe's all() requires.
  await service.probe.all(
    'UPDATE order_items SET shipcost_cents = 150 WHERE order_id = ? RETURNING order_item_id',
    accepted.orderId,
  );
  const rows = await service.probe.all<{ order_item_id: number }>(
    'SELECT order_item_id FROM order_items WHERE order_id = ? ORDER BY order_item_id',
    accepted.orderId,
  );
  const itemIds = rows.map((r) => r.order_item_id);
  return { orderId: accepted.orderId, createdAt, itemIds };
}

/** What a worker or the seller does to an item: a new status at a later time. */
async function update(itemId: number, at: number, status = 35): Promise<void> {
  await service.probe.all(
    `UPDATE order_items SET status = ?, updated_at = ?, status_changed_at = ? WHERE order_item_id = ?
     RETURNING order_item_id`,
    status,
    at,
    at,
    itemId,
  );
}

const search = (creds: Credentials, query = '') =>
  signed(service.app, creds, 'GET', `/v1/orders${query ? `?${query}` : ''}`, undefined, { date: iso(NOW) });
const getOrder = (creds: Credentials, id: number | string, query = '') =>
  signed(service.app, creds, 'GET', `/v1/orders/${id}${query}`, undefined, { date: iso(NOW) });

type Body = {
  orders: { orderId: number; listings: { listingId: number; orderItems: { orderItemId: number }[] }[] }[];
  metadata: { orderResponseSize: number; next?: number };
};
const idsOf = (body: Body) => body.orders.map((o) => o.orderId);
const itemIdsOf = (body: Body) =>
  body.orders.flatMap((o) => o.listings.flatMap((l) => l.orderItems.map((i) => i.orderItemId)));

const HARBOUR = { listingId: 1001, vendorId: 501 };
const PRAIRIE = { listingId: 2002, vendorId: 601 };
const RHEIN = { listingId: 3001, vendorId: 701 };

let o1: Seeded, o2: Seeded, o3: Seeded, o4: Seeded, o5: Seeded, o6: Seeded, o7: Seeded, o8: Seeded;
let b1: Seeded;

beforeAll(async () => {
  service = await createTestService({ clock: () => NOW });
  alice = await service.client('alice');
  bob = await service.client('bob');
  o1 = await seed(alice, NOW - 100 * DAY, [{ ...HARBOUR, quantity: 1 }], 'PO-1');
  o2 = await seed(
    alice,
    NOW - 80 * DAY,
    [
      { ...HARBOUR, quantity: 2 },
      { ...PRAIRIE, quantity: 1 },
    ],
    'PO-2',
  );
  o3 = await seed(alice, NOW - 50 * DAY, [{ ...PRAIRIE, quantity: 1 }], 'PO-2');
  o7 = await seed(alice, NOW - 30 * DAY, [{ ...PRAIRIE, quantity: 1 }]);
  o8 = await seed(alice, NOW - 30 * DAY, [{ ...RHEIN, quantity: 1 }]);
  o4 = await seed(alice, NOW - 20 * DAY, [
    { ...RHEIN, quantity: 1 },
    { ...HARBOUR, quantity: 1 },
  ]);
  o5 = await seed(alice, NOW - DAY, [{ ...PRAIRIE, quantity: 2 }]);
  o6 = await seed(alice, NOW, [{ ...PRAIRIE, quantity: 1 }]);
  b1 = await seed(bob, NOW - 5 * DAY, [{ ...HARBOUR, quantity: 1 }], 'PO-2');
  await update(o2.itemIds[0]!, NOW - 10 * DAY);
  await update(o5.itemIds[1]!, NOW - 3_600_000, 5);
});
afterAll(() => service.close());

describe('GET /v1/orders without parameters', () => {
  it('returns the last 90 days up to this millisecond, oldest first, ties by orderId, every item dated', async () => {
    const res = await search(alice);
    expect(res.status).toBe(200);
    expect(res.headers['svc-status']).toBe('2000');
    expect(idsOf(res.body)).toEqual([o2, o3, o7, o8, o4, o5, o6].map((o) => o.orderId));
    expect(res.body.metadata).toEqual({ orderResponseSize: 7 });
    expect(res.body.orders[0]).toEqual({
      orderId: o2.orderId,
      createDate: iso(o2.createdAt),
      currency: 'USD',
      dryrun: false,
      referenceId: 'PO-2',
      listings: [
        {
          listingId: 1001,
          title: 'Book 1001',
          isbn: '9780000001001',
          quantity: 2,
          vendorId: 501,
          minShippingDays: 2,
          maxShippingDays: 5,
          orderItems: [
            {
              orderItemId: o2.itemIds[0],
              cost: 10,
              shipcost: 1.5,
              status: 35,
              itemUpdateDate: iso(NOW - 10 * DAY),
            },
            {
              orderItemId: o2.itemIds[1],
              cost: 10,
              shipcost: 1.5,
              status: 1,
              itemUpdateDate: iso(o2.createdAt),
            },
          ],
        },
        {
          listingId: 2002,
          title: 'Book 2002',
          isbn: '9780000002002',
          quantity: 1,
          vendorId: 601,
          minShippingDays: 2,
          maxShippingDays: 5,
          orderItems: [
            {
              orderItemId: o2.itemIds[2],
              cost: 10,
              shipcost: 1.5,
              status: 1,
              itemUpdateDate: iso(o2.createdAt),
            },
          ],
        },
      ],
    });
  });

  it('sorts newest first with sortOrder=descending, ties by orderId descending', async () => {
    const res = await search(alice, 'sortOrder=descending');
    expect(idsOf(res.body)).toEqual([o6, o5, o4, o8, o7, o3, o2].map((o) => o.orderId));
  });
});

describe('GET /v1/orders by creation date', () => {
  it('with dateStart alone covers the 90 days after it', async () => {
    const res = await search(alice, `dateStart=${q(iso(NOW - 60 * DAY))}`);
    expect(idsOf(res.body)).toEqual([o3, o7, o8, o4, o5, o6].map((o) => o.orderId));
  });

  it('with dateEnd alone covers the 90 days before it, dateEnd itself excluded', async () => {
    const res = await search(alice, `dateEnd=${q(iso(o3.createdAt))}`);
    expect(idsOf(res.body)).toEqual([o1, o2].map((o) => o.orderId));
  });

  it('includes an order created exactly at dateStart and excludes one created exactly at dateEnd', async () => {
    const res = await search(alice, `dateStart=${q(iso(o3.createdAt))}&dateEnd=${q(iso(o4.createdAt))}`);
    expect(idsOf(res.body)).toEqual([o3, o7, o8].map((o) => o.orderId));
  });

  it('reads a bare date as midnight UTC and an offset as such', async () => {
    const start = new Date(o7.createdAt).toISOString().slice(0, 10);
    const res = await search(alice, `dateStart=${start}&dateEnd=${q('2026-11-20T12:00:00+02:00')}`);
    expect(idsOf(res.body)).toEqual([o7, o8, o4].map((o) => o.orderId));
  });
});

describe('GET /v1/orders by item update date', () => {
  it('with itemUpdateDateStart keeps only items updated since, and orders that have one', async () => {
    const res = await search(alice, `itemUpdateDateStart=${q(iso(NOW - 15 * DAY))}`);
    expect(idsOf(res.body)).toEqual([o2, o5, o6].map((o) => o.orderId));
    const first = res.body.orders[0];
    expect(first.listings).toHaveLength(1);
    expect(first.listings[0]).toMatchObject({ listingId: 1001, quantity: 2 });
    expect(first.listings[0].orderItems).toEqual([
      {
        orderItemId: o2.itemIds[0],
        cost: 10,
        shipcost: 1.5,
        status: 35,
        itemUpdateDate: iso(NOW - 10 * DAY),
      },
    ]);
    expect(itemIdsOf(res.body)).toEqual([o2.itemIds[0], ...o5.itemIds, ...o6.itemIds]);
  });

  it('with itemUpdateDateEnd keeps only items last updated before it', async () => {
    const res = await search(alice, `itemUpdateDateEnd=${q(iso(NOW - 15 * DAY))}`);
    expect(idsOf(res.body)).toEqual([o2, o3, o7, o8, o4].map((o) => o.orderId));
    expect(itemIdsOf(res.body).slice(0, 2)).toEqual([o2.itemIds[1], o2.itemIds[2]]);
  });

  it('with both, an item updated exactly at the start is in and one updated exactly at the end is out', async () => {
    const res = await search(
      alice,
      `itemUpdateDateStart=${q(iso(NOW - 10 * DAY))}&itemUpdateDateEnd=${q(iso(NOW - 3_600_000))}`,
    );
    expect(idsOf(res.body)).toEqual([o2, o5].map((o) => o.orderId));
    expect(itemIdsOf(res.body)).toEqual([o2.itemIds[0], o5.itemIds[0]]);
  });
});

describe('GET /v1/orders by vendor, reference and ids', () => {
  it('with vendorId returns orders with an item of that seller, all their items', async () => {
    const res = await search(alice, 'vendorId=501');
    expect(idsOf(res.body)).toEqual([o2, o4].map((o) => o.orderId));
    expect(itemIdsOf(res.body)).toEqual([...o2.itemIds, ...o4.itemIds]);
  });

  it('with referenceId returns only this client’s orders with that reference', async () => {
    const res = await search(alice, 'referenceId=PO-2');
    expect(idsOf(res.body)).toEqual([o2, o3].map((o) => o.orderId));
    expect((await search(alice, 'referenceId=PO-404')).body).toEqual({
      orders: [],
      metadata: { orderResponseSize: 0 },
    });
  });

  it('with repeated orderId returns those in the window that are the client’s own', async () => {
    const ids = [o5, o1, b1, o2, o2].map((o) => `orderId=${o.orderId}`).join('&');
    const res = await search(alice, `${ids}&orderId=0&orderId=-3&orderId=999999`);
    expect(idsOf(res.body)).toEqual([o2, o5].map((o) => o.orderId));
  });

  it('with repeated orderItemId returns just those items, in the orders holding them', async () => {
    const items = [o2.itemIds[2]!, o4.itemIds[1]!, o4.itemIds[0]!, b1.itemIds[0]!, o1.itemIds[0]!];
    const res = await search(alice, items.map((id) => `orderItemId=${id}`).join('&'));
    expect(idsOf(res.body)).toEqual([o2, o4].map((o) => o.orderId));
    expect(res.body.orders[0].listings.map((l: { listingId: number }) => l.listingId)).toEqual([2002]);
    expect(itemIdsOf(res.body)).toEqual([o2.itemIds[2], o4.itemIds[0], o4.itemIds[1]]);
  });
});

describe('GET /v1/orders with criteria combined', () => {
  it('vendorId and itemUpdateDateStart, descending: orders of the seller with an item updated since', async () => {
    const res = await search(
      alice,
      `vendorId=501&itemUpdateDateStart=${q(iso(NOW - 15 * DAY))}&sortOrder=descending`,
    );
    expect(idsOf(res.body)).toEqual([o2.orderId]);
    expect(itemIdsOf(res.body)).toEqual([o2.itemIds[0]]);
  });

  it("vendorId and itemUpdateDateStart: the item updated since may be another seller's", async () => {
    // o2's item of seller 601 was not updated since; its item of seller 501 was: o2 is an order of 601 with an
    // item updated since, and that item is the one shown. An index of a seller's items by update time alone
    // (the seller's own items updated in the range) would miss o2.
    const query = `vendorId=601&itemUpdateDateStart=${q(iso(NOW - 15 * DAY))}`;
    const res = await search(alice, query);
    expect(idsOf(res.body)).toEqual([o2, o5, o6].map((o) => o.orderId));
    expect(itemIdsOf(res.body)).toEqual([o2.itemIds[0], ...o5.itemIds, ...o6.itemIds]);
    const descending = await search(alice, `${query}&sortOrder=descending`);
    expect(idsOf(descending.body)).toEqual([o6, o5, o2].map((o) => o.orderId));
  });

  it('vendorId with a wide update range reads the items of any seller', async () => {
    const res = await search(alice, `vendorId=601&itemUpdateDateEnd=${q(iso(NOW))}`);
    expect(idsOf(res.body)).toEqual([o2, o3, o7, o5].map((o) => o.orderId));
    expect(itemIdsOf(res.body)).toEqual([...o2.itemIds, ...o3.itemIds, ...o7.itemIds, ...o5.itemIds]);
  });

  it('referenceId and a date window', async () => {
    const res = await search(alice, `referenceId=PO-2&dateStart=${q(iso(NOW - 60 * DAY))}`);
    expect(idsOf(res.body)).toEqual([o3.orderId]);
  });

  it('orderId, vendorId and orderItemId: only orders meeting every criterion, only matching items', async () => {
    const ids = [o2, o3, o4].map((o) => `orderId=${o.orderId}`).join('&');
    const res = await search(
      alice,
      `${ids}&vendorId=501&orderItemId=${o4.itemIds[0]}&orderItemId=${o3.itemIds[0]}`,
    );
    expect(idsOf(res.body)).toEqual([o4.orderId]);
    expect(itemIdsOf(res.body)).toEqual([o4.itemIds[0]]);
  });

  it('every parameter at once: only what meets all of them, nothing more to page', async () => {
    const query =
      `dateStart=${q(iso(NOW - 85 * DAY))}&dateEnd=${q(iso(NOW - 5 * DAY))}` +
      `&itemUpdateDateStart=${q(iso(NOW - 90 * DAY))}&itemUpdateDateEnd=${q(iso(NOW))}` +
      `&vendorId=501&referenceId=PO-2&${[o2, o3, o4].map((o) => `orderId=${o.orderId}`).join('&')}` +
      `&orderItemId=${o2.itemIds[1]}&orderItemId=${o3.itemIds[0]}&sortOrder=descending`;
    const first = await search(alice, `${query}&limit=1`);
    expect(idsOf(first.body)).toEqual([o2.orderId]);
    expect(itemIdsOf(first.body)).toEqual([o2.itemIds[1]]);
    expect(first.body.metadata).toEqual({ orderResponseSize: 1 });
  });

  it('limit cuts the page and metadata.next continues it with the same criteria', async () => {
    const first = await search(alice, 'vendorId=601&limit=2');
    expect(idsOf(first.body)).toEqual([o2, o3].map((o) => o.orderId));
    expect(first.body.metadata).toEqual({ orderResponseSize: 2, next: expect.any(Number) });
    const second = await search(alice, `vendorId=601&limit=2&next=${first.body.metadata.next}`);
    expect(idsOf(second.body)).toEqual([o7, o5].map((o) => o.orderId));
    expect(second.body.metadata.next).toBeDefined();
    const third = await search(alice, `vendorId=601&limit=2&next=${second.body.metadata.next}`);
    expect(third.body).toMatchObject({ metadata: { orderResponseSize: 1 } });
    expect(idsOf(third.body)).toEqual([o6.orderId]);
    expect(third.body.metadata).not.toHaveProperty('next');
  });
});

describe('GET /v1/orders across clients', () => {
  it('shows another client only its own orders, whatever the criteria', async () => {
    expect(idsOf((await search(bob)).body)).toEqual([b1.orderId]);
    expect(idsOf((await search(bob, `orderId=${o2.orderId}`)).body)).toEqual([]);
    expect(idsOf((await search(bob, `orderItemId=${o2.itemIds[0]}`)).body)).toEqual([]);
    expect(idsOf((await search(bob, 'vendorId=601')).body)).toEqual([]);
  });
});

describe('GET /v1/orders/{orderId}', () => {
  it('returns the whole order with every item dated, as search shows it', async () => {
    const res = await getOrder(alice, o2.orderId);
    expect(res.status).toBe(200);
    expect(res.headers['svc-status']).toBe('2000');
    const listed = (await search(alice, `orderId=${o2.orderId}`)).body.orders[0];
    expect(res.body).toEqual(listed);
  });

  it('answers 4041 for another client’s order, an unknown id, and ids that are not positive integers', async () => {
    for (const id of [b1.orderId, 999999, 'abc', 0, -1, '1.5', '1e3', '99999999999999999999']) {
      const res = await getOrder(alice, id);
      expect(res.status, String(id)).toBe(404);
      expect(res.headers['svc-status']).toBe('4041');
      expect(res.body.messages).toEqual([`orderId: no order ${id}`]);
    }
  });

  it('refuses query parameters with 4220', async () => {
    const res = await getOrder(alice, o2.orderId, '?expand=items');
    expect(res.status).toBe(422);
    expect(res.headers['svc-status']).toBe('4220');
    expect(res.body.messages).toEqual(['expand: unknown query parameter']);
  });
});
