import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDb, type Db } from '../../src/store/db.js';
import {
  createOrderSearchRepository,
  type Driver,
  type SearchCriteria,
} from '../../src/store/order-search.repository.js';
import type { OrderItemRow, OrderRow } from '../../src/store/order.rows.js';

// Every access path of the search against a plain model of the rules, on a random store: the HTTP tests
// cannot reach the paths that only a large store takes.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.parse('2026-06-01T00:00:00.000Z');

let dir: string;
let db: Db;
let orders: OrderRow[];
let items: OrderItemRow[];

/** Deterministic, so a failure replays. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = random(42);
const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
const int = (below: number) => Math.floor(rnd() * below);

function fill(): void {
  db.exec(`INSERT INTO clients (client_id, name, access_key, secret_key, created_at)
             VALUES (1, 'a', 'ka', 's', 0), (2, 'b', 'kb', 's', 0), (3, 'c', 'kc', 's', 0);
           INSERT INTO cards (card_id, client_id, token, created_at) VALUES (1, 1, 't1', 0), (2, 2, 't2', 0), (3, 3, 't3', 0);`);
  const order = db.prepare(
    `INSERT INTO orders (client_id, request_id, request_hash, reference_id, domain, currency, shipping_mode,
       ship_addr, bill_addr, card_id, created_at)
     VALUES (?, ?, 'h', ?, 'bookmarket.com', 'USD', 'S', '{}', '{}', ?, ?)`,
  );
  const item = db.prepare(
    `INSERT INTO order_items (order_id, client_id, order_created_at, line_no, listing_id, vendor_id, title, isbn,
       line_quantity, status, updated_at, status_changed_at)
     VALUES (?, ?, ?, ?, ?, ?, 't', 'i', 1, 5, ?, ?)`,
  );
  db.transaction(() => {
    for (let n = 0; n < 900; n++) {
      const client = 1 + (n % 3);
      // Whole hours, so that many orders share a creation time.
      const createdAt = T0 + int(120 * 24) * HOUR;
      const ref = rnd() < 0.3 ? pick(['r1', 'r2', 'r3']) : null;
      const orderId = Number(order.run(client, `q${n}`, ref, client, createdAt).lastInsertRowid);
      for (let line = 0, count = 1 + int(4); line < count; line++) {
        // Some items carry a time a little before their order's: another process's clock wrote it.
        const roll = rnd();
        const updatedAt =
          roll < 0.45
            ? createdAt
            : roll < 0.55
              ? createdAt - int(30) * 60_000
              : createdAt + int(30 * 24) * HOUR;
        item.run(orderId, client, createdAt, line, 100 + line, pick([1, 2, 3, 4, 5]), updatedAt, updatedAt);
      }
    }
  })();
  orders = db.prepare('SELECT * FROM orders').all() as OrderRow[];
  items = db.prepare('SELECT * FROM order_items ORDER BY order_item_id').all() as OrderItemRow[];
}

/** The rules of SPEC.md and CONTRACT.md section 10, applied to every row. */
function model(clientId: number, c: SearchCriteria): { orderId: number; itemIds: number[] }[] {
  const itemCriteria = c.itemUpdateStart !== undefined || c.itemUpdateEnd !== undefined || !!c.orderItemIds;
  const itemMatches = (i: OrderItemRow) =>
    (c.itemUpdateStart === undefined || i.updated_at >= c.itemUpdateStart) &&
    (c.itemUpdateEnd === undefined || i.updated_at < c.itemUpdateEnd) &&
    (!c.orderItemIds || c.orderItemIds.includes(i.order_item_id));
  const sign = c.sortOrder === 'ascending' ? 1 : -1;
  return orders
    .filter(
      (o) =>
        o.client_id === clientId &&
        o.created_at >= c.dateStart &&
        o.created_at < c.dateEnd &&
        (c.referenceId === undefined || o.reference_id === c.referenceId) &&
        (!c.orderIds || c.orderIds.includes(o.order_id)),
    )
    .map((o) => ({ o, own: items.filter((i) => i.order_id === o.order_id) }))
    .filter(({ own }) => c.vendorId === undefined || own.some((i) => i.vendor_id === c.vendorId))
    .map(({ o, own }) => ({ o, shown: itemCriteria ? own.filter(itemMatches) : own }))
    .filter(({ shown }) => shown.length > 0)
    .sort((a, b) => sign * (a.o.created_at - b.o.created_at || a.o.order_id - b.o.order_id))
    .map(({ o, shown }) => ({ orderId: o.order_id, itemIds: shown.map((i) => i.order_item_id) }));
}

function randomCriteria(): SearchCriteria {
  const dateStart = T0 + int(60) * DAY + (rnd() < 0.5 ? 0 : int(24) * HOUR);
  const c: SearchCriteria = {
    dateStart,
    dateEnd: dateStart + (1 + int(90)) * DAY,
    sortOrder: rnd() < 0.5 ? 'ascending' : 'descending',
    limit: 1 + int(12),
  };
  // Item bounds on whole days, like the window: a skewed item sits right next to them.
  if (rnd() < 0.4) c.itemUpdateStart = T0 + int(150) * DAY;
  if (rnd() < 0.3) c.itemUpdateEnd = (c.itemUpdateStart ?? T0) + int(90) * DAY;
  if (rnd() < 0.2) c.itemUpdateStart = c.dateStart - int(60) * 60_000;
  if (rnd() < 0.4) c.vendorId = 1 + int(5);
  if (rnd() < 0.15) c.referenceId = pick(['r1', 'r2', 'r3', 'r9']);
  if (rnd() < 0.15) c.orderIds = Array.from({ length: 1 + int(40) }, () => 1 + int(900));
  if (rnd() < 0.15) c.orderItemIds = Array.from({ length: 1 + int(60) }, () => 1 + int(items.length));
  return c;
}

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'order-search-'));
  db = openDb(path.join(dir, 'orders.db'));
  fill();
});
afterAll(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('order search repository, paged to the end, against the model of the rules', () => {
  it.each([
    ['an update range read directly', 1e9],
    ['an update range scanned in result order', 0],
  ])('with %s', async (_label, narrowUpdateScan) => {
    const repo = createOrderSearchRepository(db, { narrowUpdateScan });
    const drivers = new Set<Driver>();
    for (let round = 0; round < 250; round++) {
      const clientId = 1 + int(3);
      const criteria = randomCriteria();
      const expected = model(clientId, criteria);
      const seen: { orderId: number; itemIds: number[] }[] = [];
      let after: SearchCriteria['after'];
      for (let pages = 0; ; pages++) {
        drivers.add(repo.plan(clientId, { ...criteria, after }).driver);
        const page = await repo.search(clientId, { ...criteria, after });
        seen.push(
          ...page.orders.map(({ order, items }) => ({
            orderId: order.order_id,
            itemIds: items.map((i) => i.order_item_id),
          })),
        );
        expect(page.more, JSON.stringify(criteria)).toBe(seen.length < expected.length);
        const last = page.orders.at(-1)?.order;
        if (!page.more || !last || pages > expected.length) break;
        after = { createdAt: last.created_at, orderId: last.order_id };
      }
      expect(seen, JSON.stringify({ clientId, criteria })).toEqual(expected);
    }
    const expectedDrivers: Driver[] = ['order-ids', 'item-ids', 'reference', 'vendor-items', 'orders'];
    expectedDrivers.push(
      ...(narrowUpdateScan > 0 ? (['updated-items'] as const) : (['dated-items'] as const)),
    );
    expect([...drivers].sort()).toEqual(expectedDrivers.sort());
  });
});

describe('order search query plans', () => {
  const base: SearchCriteria = { dateStart: T0, dateEnd: T0 + 90 * DAY, sortOrder: 'ascending', limit: 20 };
  const after = { createdAt: T0 + DAY, orderId: 5 };
  const planOf = (narrowUpdateScan: number, extra: Partial<SearchCriteria>) => {
    const plan = createOrderSearchRepository(db, { narrowUpdateScan }).plan(1, { ...base, ...extra });
    const explain = (sql: string, params: object) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as { detail: string }[])
        .map((r) => r.detail)
        .join('\n');
    return {
      driver: plan.driver,
      page: explain(plan.pageSql, plan.params),
      items: explain(plan.itemsSql, { ...plan.params, pageIds: '[1,2]' }),
    };
  };

  it.each([
    ['orders', {}, 'orders_client_created'],
    ['orders', { sortOrder: 'descending', after }, 'orders_client_created'],
    ['reference', { referenceId: 'r1', after }, 'orders_client_reference'],
    ['order-ids', { orderIds: [1, 2, 3] }, 'INTEGER PRIMARY KEY'],
    ['item-ids', { orderItemIds: [1, 2], itemUpdateStart: T0 }, 'INTEGER PRIMARY KEY'],
    ['vendor-items', { vendorId: 2, after }, 'COVERING INDEX order_items_client_vendor'],
    ['vendor-items', { vendorId: 2, sortOrder: 'descending' }, 'COVERING INDEX order_items_client_vendor'],
    ['dated-items', { itemUpdateStart: T0, after }, 'COVERING INDEX order_items_search_created'],
  ] as const)('%s %j reads %s and no table in full', (driver, extra, index) => {
    const plan = planOf(0, extra);
    expect(plan.driver).toBe(driver);
    expect(plan.page).toContain(index);
    expect(plan.page).not.toMatch(/^SCAN (o|d|order_items|orders)\b/m);
    if (['orders', 'reference', 'vendor-items', 'dated-items'].includes(driver)) {
      expect(plan.page).not.toContain('TEMP B-TREE');
    }
    expect(plan.items).toMatch(/SEARCH i USING (INDEX order_items_order|INTEGER PRIMARY KEY)/);
  });

  it('reads a narrow update range from its index, in the order-date window, and sorts only that', () => {
    const plan = planOf(1e9, { itemUpdateStart: T0, vendorId: 2 });
    expect(plan.driver).toBe('updated-items');
    expect(plan.page).toContain(
      'COVERING INDEX order_items_search_updated (client_id=? AND updated_at>? AND updated_at<?)',
    );
  });

  it('seeks the cursor, not the window start, when paging on', () => {
    expect(planOf(0, { vendorId: 2, after }).page).toContain('(order_created_at,order_id)>(?,?)');
  });
});
