import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { parseSecretsKey } from '../../src/config/secrets-key-format.js';
import { createSealer } from '../../src/domain/secrets.js';
import { openStore } from '../../src/store/open-store.js';
import { planSearch, updateRangeProbe } from '../../src/store/postgres/search.sql.js';
import { openPostgresStore } from '../../src/store/postgres/postgres.store.js';
import {
  SCAN_CAPS,
  type Driver,
  type RangeCounts,
  type ScanCaps,
} from '../../src/store/shared/search-plan.js';
import { sqliteSearch, type SqliteSearchOptions } from '../../src/store/sqlite/search.sqlite.js';
import { openDb, type Db } from '../../src/store/sqlite/sqlite.db.js';
import type { SearchCriteria, SearchPage, SearchStore } from '../../src/store/port/store.port.js';
import type { Probe } from '../helpers/store.probe.js';
import { TEST_STORE, openProbe, testStoreEnv, type TestStoreEnv } from '../helpers/test-store.js';

// Every access path of the search port against a plain model of the rules, on a random store, on the store of
// the vitest project: the HTTP tests cannot reach the paths that only a large store takes.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.parse('2026-06-01T00:00:00.000Z');

interface OrderRow {
  order_id: number;
  client_id: number;
  reference_id: string | null;
  created_at: number;
}
interface ItemRow {
  order_item_id: number;
  order_id: number;
  vendor_id: number;
  updated_at: number;
}

let dir: string;
let storeEnv: TestStoreEnv;
let probe: Probe;
let orders: OrderRow[];
let items: ItemRow[];

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

/** Inserts `rows` in statements of 100 rows; RETURNING gives the SQLite probe's all() rows to return. */
async function insertRows(head: string, row: string, rows: unknown[][], returning: string): Promise<void> {
  for (let start = 0; start < rows.length; start += 100) {
    const chunk = rows.slice(start, start + 100);
    await probe.all(
      `${head} VALUES ${chunk.map(() => row).join(', ')} RETURNING ${returning}`,
      ...chunk.flat(),
    );
  }
}

/** Orders (id, client, request, reference, card, created) and their items (see fill), as accepted: status 5. */
async function insertOrders(orderRows: unknown[][], itemRows: unknown[][]): Promise<void> {
  await insertRows(
    `INSERT INTO orders (order_id, client_id, request_id, request_hash, reference_id, domain, currency,
       shipping_mode, ship_addr, bill_addr, card_id, created_at)`,
    `(?, ?, ?, 'h', ?, 'bookmarket.com', 'USD', 'S', '{}', '{}', ?, ?)`,
    orderRows,
    'order_id',
  );
  await insertRows(
    `INSERT INTO order_items (order_item_id, order_id, client_id, order_created_at, line_no, listing_id, vendor_id,
       title, isbn, line_quantity, status, updated_at, status_changed_at)`,
    `(?, ?, ?, ?, ?, ?, ?, 't', 'i', 1, 5, ?, ?)`,
    itemRows,
    'order_item_id',
  );
}

// Ids are given, as the rows are numbered in insertion order on a fresh SQLite file: the same on both stores.
async function fill(): Promise<void> {
  await probe.exec(`INSERT INTO clients (client_id, name, access_key, secret_key, created_at)
             VALUES (1, 'a', 'ka', 's', 0), (2, 'b', 'kb', 's', 0), (3, 'c', 'kc', 's', 0);
           INSERT INTO cards (card_id, client_id, token, created_at) VALUES (1, 1, 't1', 0), (2, 2, 't2', 0), (3, 3, 't3', 0);`);
  const orderRows: unknown[][] = [];
  const itemRows: unknown[][] = [];
  const updates: [number, number][] = [];
  for (let n = 0; n < 900; n++) {
    const orderId = n + 1;
    const client = 1 + (n % 3);
    // Whole hours, so that many orders share a creation time.
    const createdAt = T0 + int(120 * 24) * HOUR;
    const ref = rnd() < 0.3 ? pick(['r1', 'r2', 'r3']) : null;
    orderRows.push([orderId, client, `q${n}`, ref, client, createdAt]);
    for (let line = 0, count = 1 + int(4); line < count; line++) {
      // Some items carry a time a little before their order's: another process's clock wrote it.
      const roll = rnd();
      const updatedAt =
        roll < 0.45
          ? createdAt
          : roll < 0.55
            ? createdAt - int(30) * 60_000
            : createdAt + int(30 * 24) * HOUR;
      const vendorId = pick([1, 2, 3, 4, 5]);
      const itemId = itemRows.length + 1;
      // An item is accepted with its order's time (or a skewed one before it), later updates move it on.
      const acceptedAt = Math.min(updatedAt, createdAt);
      if (updatedAt > acceptedAt) updates.push([itemId, updatedAt]);
      itemRows.push([itemId, orderId, client, createdAt, line, 100 + line, vendorId, acceptedAt, acceptedAt]);
    }
  }
  await insertOrders(orderRows, itemRows);
  // Updated as the service does, so that the store keeps each order's latest item update (its trigger).
  for (let start = 0; start < updates.length; start += 100) {
    const chunk = updates.slice(start, start + 100);
    await probe.all(
      `UPDATE order_items SET updated_at = CASE order_item_id ${chunk.map(() => 'WHEN ? THEN CAST(? AS BIGINT)').join(' ')} END
        WHERE order_item_id IN (${chunk.map(() => '?').join(', ')}) RETURNING order_item_id`,
      ...chunk.flat(),
      ...chunk.map(([id]) => id),
    );
  }
  orders = await probe.all<OrderRow>('SELECT order_id, client_id, reference_id, created_at FROM orders');
  items = await probe.all<ItemRow>(
    'SELECT order_item_id, order_id, vendor_id, updated_at FROM order_items ORDER BY order_item_id',
  );
}

/** The rules of SPEC.md and docs/api.md#search, applied to every row. */
function model(clientId: number, c: SearchCriteria): { orderId: number; itemIds: number[] }[] {
  const itemCriteria = c.itemUpdateStart !== undefined || c.itemUpdateEnd !== undefined || !!c.orderItemIds;
  const itemMatches = (i: ItemRow) =>
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
  // Drawn apart, so that the criteria above stay those they were before pages had a size.
  // Sizes from below one order's items to a dozen orders' (1 to 4 items each): pages end early, not all of them.
  if (rndSize() < 0.25) c.maxItems = Math.floor(rndSize() * 30);
  return c;
}

const rndSize = random(7);

/** The items each order of a page holds in all (what SearchCriteria.maxItems counts), in page order. */
const allItemsOf = (page: SearchPage): number[] =>
  page.orders.map(({ order }) => items.filter((i) => i.order_id === order.orderId).length);

/** The PostgreSQL adapter's statement for a search, after the probe of the update range it runs first. */
async function postgresPlan(clientId: number, c: SearchCriteria, caps: ScanCaps) {
  const count = updateRangeProbe(clientId, c, caps);
  const counted = count ? (await probe.all<RangeCounts>(count.sql, ...count.params))[0] : undefined;
  return planSearch(clientId, c, { counted, caps });
}

/** The store's search with given thresholds for an update range, and the driver each search takes. */
interface SearchSubject {
  search: SearchStore;
  driver(clientId: number, c: SearchCriteria): Promise<Driver>;
  close(): Promise<void>;
}

async function searchSubject(caps: ScanCaps & SqliteSearchOptions): Promise<SearchSubject> {
  if (TEST_STORE === 'sqlite') {
    const db = openDb(storeEnv.env.DB_PATH!);
    const search = sqliteSearch(db, Buffer.alloc(32), caps);
    return {
      search,
      driver: async (clientId, c) => search.plan(clientId, c).driver,
      close: async () => {
        search.close();
        db.close();
      },
    };
  }
  const sealer = createSealer(parseSecretsKey(storeEnv.env.SECRETS_KEY!));
  const store = await openPostgresStore(storeEnv.env.DATABASE_URL!, { ...caps, poolSize: 2, sealer });
  return {
    search: store.search,
    driver: async (clientId, c) => (await postgresPlan(clientId, c, caps)).driver,
    close: () => store.close(),
  };
}

/**
 * Caps that force each path of an update range: the orders updated, the items updated, or a scan; and one that
 * leads by a scan when the window's first items hold the page, else by the orders updated; the last as the one
 * before, but led by the orders updated whenever fewer than 3.
 */
const ORDER_PATH: ScanCaps = { fewOrderScan: 1e9, narrowOrderScan: 1e9, narrowUpdateScan: 0, denseScan: 0 };
const ITEM_PATH: ScanCaps = { fewOrderScan: 0, narrowOrderScan: 0, narrowUpdateScan: 1e9, denseScan: 0 };
const SCAN_PATH: ScanCaps = { fewOrderScan: 0, narrowOrderScan: 0, narrowUpdateScan: 0, denseScan: 0 };
const DENSE_PATH: ScanCaps = { fewOrderScan: 0, narrowOrderScan: 1e9, narrowUpdateScan: 0, denseScan: 1e9 };
/** As DENSE_PATH, with the window's first items fewer than it holds: the probe's cut lands inside it. */
const DENSE_CUT_PATH: ScanCaps = { ...DENSE_PATH, denseScan: 60 };
const FEW_FIRST_PATH: ScanCaps = {
  fewOrderScan: 3,
  narrowOrderScan: 1e9,
  narrowUpdateScan: 0,
  denseScan: 1e9,
};

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'order-search-'));
  storeEnv = await testStoreEnv(dir);
  // Opening the store applies the migrations; the rows then go in by raw SQL.
  await (await openStore(loadConfig(storeEnv.env), 'test')).close();
  probe = openProbe(storeEnv.env);
  await fill();
});
afterAll(async () => {
  await probe.close();
  await storeEnv.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The scan with no bound but the page's, read on the search thread as the web reads it (SQLite only: its own). */
const SCAN_PATH_ON_THREAD = { ...SCAN_PATH, searchThread: { timeoutMs: 0 } };

describe('order search of the store port, paged to the end, against the model of the rules', () => {
  it.each([
    ['an update range led by the orders updated since its start', ORDER_PATH, ['updated-orders']],
    ['an update range read directly', ITEM_PATH, ['updated-items']],
    ['an update range scanned in result order', SCAN_PATH, ['dated-items']],
    ...(TEST_STORE === 'sqlite'
      ? ([
          [
            'an update range scanned in result order, on the search thread',
            SCAN_PATH_ON_THREAD,
            ['dated-items'],
          ],
        ] as const)
      : []),
    [
      'an update range scanned in result order when its first items hold the page',
      DENSE_PATH,
      ['dated-items', 'updated-orders'],
    ],
    [
      'an update range scanned in result order when its first 6 or 60 items hold the page',
      DENSE_CUT_PATH,
      ['dated-items', 'updated-orders'],
    ],
    [
      'an update range led by its orders when under 3 were updated, else as the one above',
      FEW_FIRST_PATH,
      ['dated-items', 'updated-orders'],
    ],
  ] as const)('with %s', async (_label, caps, rangeDrivers) => {
    const subject = await searchSubject(caps);
    const drivers = new Set<Driver>();
    try {
      for (let round = 0; round < 250; round++) {
        const clientId = 1 + int(3);
        const criteria = randomCriteria();
        const expected = model(clientId, criteria);
        const seen: { orderId: number; itemIds: number[] }[] = [];
        let after: SearchCriteria['after'];
        for (let pages = 0; ; pages++) {
          drivers.add(await subject.driver(clientId, { ...criteria, after }));
          const page = await subject.search.search(clientId, { ...criteria, after });
          seen.push(
            ...page.orders.map(({ order, items }) => ({
              orderId: order.orderId,
              itemIds: items.map((i) => i.orderItemId),
            })),
          );
          expect(page.more, JSON.stringify(criteria)).toBe(seen.length < expected.length);
          // A page past its size is its first order alone.
          const pageItems = allItemsOf(page).reduce((sum, n) => sum + n, 0);
          if (page.orders.length > 1) expect(pageItems).toBeLessThanOrEqual(criteria.maxItems ?? Infinity);
          const last = page.orders.at(-1)?.order;
          if (!page.more || !last || pages > expected.length) break;
          after = { createdAt: last.createdAt, orderId: last.orderId };
        }
        expect(seen, JSON.stringify({ clientId, criteria })).toEqual(expected);
      }
    } finally {
      await subject.close();
    }
    const expectedDrivers: Driver[] = [
      'order-ids',
      'item-ids',
      'reference',
      'vendor-items',
      'orders',
      ...rangeDrivers,
    ];
    expect([...drivers].sort()).toEqual(expectedDrivers.sort());
  });
});

// Which index each access path reads is the adapter's own business, so the plans are checked per store (only
// defined in their store's project, not reported as skipped in the other).
const base: SearchCriteria = { dateStart: T0, dateEnd: T0 + 90 * DAY, sortOrder: 'ascending', limit: 20 };
const after = { createdAt: T0 + DAY, orderId: 5 };

if (TEST_STORE === 'sqlite') {
  describe('order search query plans on SQLite', () => {
    let db: Db;
    beforeAll(() => {
      db = openDb(storeEnv.env.DB_PATH!);
    });
    afterAll(() => db.close());

    const planOf = (caps: ScanCaps, extra: Partial<SearchCriteria>) => {
      const plan = sqliteSearch(db, Buffer.alloc(32), caps).plan(1, { ...base, ...extra });
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
      const plan = planOf(SCAN_PATH, extra);
      expect(plan.driver).toBe(driver);
      expect(plan.page).toContain(index);
      expect(plan.page).not.toMatch(/^SCAN (o|d|order_items|orders)\b/m);
      if (['orders', 'reference', 'vendor-items', 'dated-items'].includes(driver)) {
        expect(plan.page).not.toContain('TEMP B-TREE');
      }
      expect(plan.items).toMatch(/SEARCH i USING (INDEX order_items_order|INTEGER PRIMARY KEY)/);
    });

    it('reads a narrow update range from its index, in the order-date window, and sorts only that', () => {
      const plan = planOf(ITEM_PATH, {
        itemUpdateStart: T0 + 60 * DAY,
        itemUpdateEnd: T0 + 61 * DAY,
        vendorId: 2,
      });
      expect(plan.driver).toBe('updated-items');
      expect(plan.page).toContain(
        'COVERING INDEX order_items_search_updated (client_id=? AND updated_at>? AND updated_at<?)',
      );
    });

    it("reads the orders updated since the start from their index, and seeks each one's items", () => {
      for (const extra of [
        { itemUpdateStart: T0 + 100 * DAY },
        { itemUpdateStart: T0 + 100 * DAY, vendorId: 2, sortOrder: 'descending', after },
      ] as const) {
        const plan = planOf(ORDER_PATH, extra);
        expect(plan.driver).toBe('updated-orders');
        expect(plan.page).toContain('COVERING INDEX orders_client_items_updated (client_id=? AND <expr>>?)');
        expect(plan.page).toMatch(
          /SEARCH i USING COVERING INDEX order_items_search_created \(client_id=\? AND order_created_at=\? AND order_id=\? AND updated_at>\?\)/,
        );
        expect(plan.page).not.toMatch(/^SCAN (o|u|d|order_items|orders)\b/m);
      }
    });

    it('seeks the cursor, not the window start, when paging on', () => {
      expect(planOf(SCAN_PATH, { vendorId: 2, after }).page).toContain('(order_created_at,order_id)>(?,?)');
    });

    it("tests an order's other conditions by one index seek each, whatever its items", () => {
      const vendor = planOf(SCAN_PATH, { vendorId: 2, itemUpdateStart: T0 });
      expect(vendor.driver).toBe('vendor-items');
      expect(vendor.page).toMatch(
        /SEARCH i (EXISTS )?USING COVERING INDEX order_items_search_created \(client_id=\? AND order_created_at=\? AND order_id=\? AND updated_at>\?\)/,
      );
      const reference = planOf(SCAN_PATH, { referenceId: 'r1', vendorId: 2 });
      expect(reference.driver).toBe('reference');
      expect(reference.page).toMatch(
        /SEARCH v (EXISTS )?USING COVERING INDEX order_items_client_vendor \(client_id=\? AND vendor_id=\? AND order_created_at=\? AND order_id=\?\)/,
      );
    });
  });
}

/** A node of PostgreSQL's EXPLAIN (FORMAT JSON). */
interface PlanNode {
  'Node Type': string;
  'Parent Relationship'?: string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}

/** Every node of the tree, each with the nodes above it. */
function* walk(node: PlanNode, above: PlanNode[] = []): Generator<{ node: PlanNode; above: PlanNode[] }> {
  yield { node, above };
  for (const child of node.Plans ?? []) yield* walk(child, [...above, node]);
}

if (TEST_STORE === 'postgres') {
  describe('order search query plans on PostgreSQL', () => {
    // On a few hundred rows reading a table in full, or hashing it for a join, is the cheapest plan: priced out
    // (in every session of these probes), the planner shows the plan of a large store, and keeps them only where
    // no index serves. `sorted` prices sorting out too.
    const plannerProbe = (sorted: boolean) => {
      const url = new URL(storeEnv.env.DATABASE_URL!);
      const off = ['seqscan', 'hashjoin', 'mergejoin', ...(sorted ? ['sort'] : [])];
      url.searchParams.set('options', off.map((name) => `-c enable_${name}=off`).join(' '));
      return openProbe({ DATABASE_URL: url.toString() });
    };
    let planners: { sorted: Probe; any: Probe };
    beforeAll(async () => {
      await probe.exec('VACUUM ANALYZE');
      planners = { sorted: plannerProbe(true), any: plannerProbe(false) };
    });
    afterAll(async () => {
      await planners.sorted.close();
      await planners.any.close();
    });

    /** `inOrder` prices sorting out too: a sort left below the LIMIT then means the index cannot give the order. */
    const planOf = async (caps: ScanCaps, extra: Partial<SearchCriteria>, inOrder = false) => {
      const plan = await postgresPlan(1, { ...base, ...extra }, caps);
      const planner = inOrder ? planners.sorted : planners.any;
      const [explained] = await planner.all<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
        `EXPLAIN (FORMAT JSON) ${plan.sql}`,
        ...plan.params,
      );
      const nodes = [...walk(explained!['QUERY PLAN'][0]!.Plan)];
      const inSubPlan = (above: PlanNode[]) => above.some((n) => n['Parent Relationship'] === 'SubPlan');
      return {
        driver: plan.driver,
        nodes,
        /** The page's scans of `index`, or those of the items' subquery. */
        scans: (index: string, items = false) =>
          nodes.filter(({ node, above }) => node['Index Name'] === index && inSubPlan(above) === items),
      };
    };

    const fullRead = (node: PlanNode) =>
      (node['Relation Name'] === 'orders' || node['Relation Name'] === 'order_items') &&
      (node['Node Type'] === 'Seq Scan' || (/Index/.test(node['Node Type']) && !node['Index Cond']));

    const ORDERED = /^Index Scan$/;
    const COVERING = /^Index Only Scan$/;
    const BY_ID = /^(Bitmap )?Index Scan$/;
    it.each([
      ['orders', {}, 'orders_client_created', ORDERED],
      ['orders', { sortOrder: 'descending', after }, 'orders_client_created', ORDERED],
      ['reference', { referenceId: 'r1', after }, 'orders_client_reference', ORDERED],
      ['order-ids', { orderIds: [1, 2, 3] }, 'orders_pkey', BY_ID],
      ['item-ids', { orderItemIds: [1, 2], itemUpdateStart: T0 }, 'order_items_pkey', BY_ID],
      ['vendor-items', { vendorId: 2, after }, 'order_items_client_vendor', COVERING],
      ['vendor-items', { vendorId: 2, sortOrder: 'descending' }, 'order_items_client_vendor', COVERING],
      ['dated-items', { itemUpdateStart: T0, after }, 'order_items_search_created', COVERING],
    ] as const)('%s %j reads %s and no table in full', async (driver, extra, index, scan) => {
      const ordered = ['orders', 'reference', 'vendor-items', 'dated-items'].includes(driver);
      const plan = await planOf(SCAN_PATH, extra, ordered);
      expect(plan.driver).toBe(driver);
      const page = plan.scans(index);
      expect(page.map(({ node }) => node['Node Type'])).toEqual([expect.stringMatching(scan)]);
      expect(plan.nodes.map(({ node }) => node).filter(fullRead)).toEqual([]);
      if (ordered) {
        // The index hands the rows over in result order: nothing sorts them below the page's LIMIT.
        const above = page[0]!.above.map((n) => n['Node Type']);
        expect(above).toContain('Limit');
        expect(above.slice(above.lastIndexOf('Limit'))).not.toContain('Sort');
      }
      // Each order's items of the page by a seek; any other reading of them a seek too: an order's item count
      // where an older version left it unset.
      const seeks = plan.scans('order_items_order', true).map(({ node }) => node['Index Cond'] ?? '');
      expect(seeks.filter((cond) => !/^\(order_id = [op]\.order_id\)$/.test(cond))).toEqual([]);
      expect(seeks.filter((cond) => cond === '(order_id = p.order_id)')).toHaveLength(1);
    });

    it("tests an order's other conditions by one index seek each, whatever its items", async () => {
      const condsOf = (plan: Awaited<ReturnType<typeof planOf>>, index: string) =>
        plan.nodes.filter(({ node }) => node['Index Name'] === index).map(({ node }) => node['Index Cond']);
      const vendor = await planOf(SCAN_PATH, { vendorId: 2, itemUpdateStart: T0 });
      expect(vendor.driver).toBe('vendor-items');
      expect(condsOf(vendor, 'order_items_search_created')).toEqual([
        expect.stringMatching(/order_created_at = .*order_id = .*updated_at >= /),
      ]);
      const reference = await planOf(SCAN_PATH, { referenceId: 'r1', vendorId: 2 });
      expect(reference.driver).toBe('reference');
      expect(condsOf(reference, 'order_items_client_vendor')).toEqual([
        expect.stringMatching(/vendor_id = .*order_created_at = .*order_id = /),
      ]);
    });

    it('reads a narrow update range from its index, in the order-date window, and sorts only that', async () => {
      // The planner goes by the rows it expects: the range is narrow in fact, as the adapter's probe finds it.
      const plan = await planOf(
        { ...SCAN_CAPS, narrowOrderScan: 0 },
        {
          itemUpdateStart: T0 + 60 * DAY,
          itemUpdateEnd: T0 + 61 * DAY,
          vendorId: 2,
        },
      );
      expect(plan.driver).toBe('updated-items');
      const scans = plan.scans('order_items_search_updated');
      expect(scans).toHaveLength(1);
      expect(scans[0]!.node['Index Cond']).toMatch(
        /^\(\(client_id = .+\) AND \(updated_at >= .+\) AND \(updated_at < .+\) AND \(order_created_at >= .+\) AND \(order_created_at < .+\)\)$/,
      );
      expect(plan.nodes.map(({ node }) => node).filter(fullRead)).toEqual([]);
    });

    it("reads the orders updated since the start from their index, and seeks each one's items", async () => {
      for (const extra of [
        { itemUpdateStart: T0 + 100 * DAY },
        { itemUpdateStart: T0 + 100 * DAY, vendorId: 2, sortOrder: 'descending', after },
      ] as const) {
        const plan = await planOf(ORDER_PATH, extra);
        expect(plan.driver).toBe('updated-orders');
        const scans = plan.scans('orders_client_items_updated');
        expect(scans.map(({ node }) => node['Index Cond'])).toEqual([
          expect.stringMatching(
            // An index-only scan names the key's expression in parentheses of its own.
            /^\(\(client_id = .+\) AND \(\(?COALESCE\(items_updated_at, created_at\)\)? >= .+\)\)$/,
          ),
        ]);
        expect(plan.scans('orders_client_created')).toEqual([]);
        expect(plan.nodes.map(({ node }) => node).filter(fullRead)).toEqual([]);
        const items = plan.nodes.filter(({ node }) => node['Index Name'] === 'order_items_search_created');
        expect(items.map(({ node }) => node['Index Cond'])).toEqual([
          expect.stringMatching(/order_created_at = .*order_id = .*updated_at >= /),
        ]);
      }
    });

    it('probes an update range by the index of orders updated, not by the window', async () => {
      const probeStatement = updateRangeProbe(1, { ...base, itemUpdateStart: T0 + 100 * DAY, vendorId: 2 })!;
      const [explained] = await planners.any.all<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
        `EXPLAIN (FORMAT JSON) ${probeStatement.sql}`,
        ...probeStatement.params,
      );
      const nodes = [...walk(explained!['QUERY PLAN'][0]!.Plan)].map(({ node }) => node);
      const ordersIndexes = nodes.map((n) => n['Index Name']).filter((name) => name?.startsWith('orders_'));
      // Twice: up to FEW_ORDER_SCAN orders, then (when not fewer) up to NARROW_ORDER_SCAN; from the index alone,
      // which holds items_updated_at (migration 20).
      expect(ordersIndexes).toEqual(['orders_client_items_updated', 'orders_client_items_updated']);
      const orderScans = nodes.filter((n) => n['Index Name'] === 'orders_client_items_updated');
      expect(orderScans.map((n) => n['Node Type'])).toEqual(['Index Only Scan', 'Index Only Scan']);
      expect(nodes.filter(fullRead)).toEqual([]);
    });

    it('seeks the cursor, not the window start, when paging on', async () => {
      const [scan] = (await planOf(SCAN_PATH, { vendorId: 2, after })).scans('order_items_client_vendor');
      expect(scan?.node['Index Cond']).toContain('ROW(order_created_at, order_id) > ROW(');
    });
  });
}

// The two shapes that read the client's whole window while the probe counted items: a client's 30
// orders of 250 items of vendor 7 priced out a minute after each was placed, then 9 later orders of vendor 8, their
// 2,250 items (over NARROW_UPDATE_SCAN) updated after all the others. Both now lead by those 9 orders (fewer than
// FEW_ORDER_SCAN, counted before the window's first DENSE_SCAN items).
describe('update ranges over orders of many items, at the default thresholds', () => {
  const CLIENT = 4;
  const ITEMS = 250;
  const EARLY = 30;
  const LATE = 9;
  const late = T0 + 40 * DAY;
  let subject: SearchSubject;
  let lateIds: number[];
  beforeAll(async () => {
    await probe.exec(`INSERT INTO clients (client_id, name, access_key, secret_key, created_at)
             VALUES (${CLIENT}, 'd', 'kd', 's', 0);
           INSERT INTO cards (card_id, client_id, token, created_at) VALUES (${CLIENT}, ${CLIENT}, 't4', 0);`);
    const orderRows: unknown[][] = [];
    const itemRows: unknown[][] = [];
    let itemId = items.length;
    for (let n = 0; n < EARLY + LATE; n++) {
      const orderId = 1000 + n;
      const createdAt = T0 + n * HOUR;
      orderRows.push([orderId, CLIENT, `heavy-${n}`, null, CLIENT, createdAt]);
      for (let line = 0; line < ITEMS; line++)
        itemRows.push([
          ++itemId,
          orderId,
          CLIENT,
          createdAt,
          line,
          100,
          n < EARLY ? 7 : 8,
          createdAt,
          createdAt,
        ]);
    }
    await insertOrders(orderRows, itemRows);
    // Priced out a minute after placing; the later orders' items updated a day apart, from `late` on.
    await probe.all(
      `UPDATE order_items SET status = 53, updated_at = CASE WHEN vendor_id = 7 THEN order_created_at + 60000
                ELSE CAST(? AS BIGINT) + (order_id - ?) * ${DAY} END
        WHERE client_id = ? RETURNING order_item_id`,
      late,
      1000 + EARLY,
      CLIENT,
    );
    lateIds = Array.from({ length: LATE }, (_, k) => 1000 + EARLY + k);
    subject = await searchSubject(SCAN_CAPS);
  });
  afterAll(() => subject?.close());

  /** Every page of a search of `limit` orders, following the cursor; each order's id and its items' count. */
  async function pages(c: SearchCriteria): Promise<{ drivers: Set<Driver>; seen: [number, number][] }> {
    const drivers = new Set<Driver>();
    const seen: [number, number][] = [];
    let after: SearchCriteria['after'];
    for (let n = 0; n <= LATE + 1; n++) {
      drivers.add(await subject.driver(CLIENT, { ...c, after }));
      const page = await subject.search.search(CLIENT, { ...c, after });
      seen.push(...page.orders.map(({ order, items }): [number, number] => [order.orderId, items.length]));
      const last = page.orders.at(-1)?.order;
      if (!page.more || !last) break;
      after = { createdAt: last.createdAt, orderId: last.orderId };
    }
    return { drivers, seen };
  }

  const window = { dateStart: T0, dateEnd: T0 + 90 * DAY };
  it.each(['ascending', 'descending'] as const)(
    'finds the later orders by their update range alone, %s, a page of 2 at a time',
    async (sortOrder) => {
      const { drivers, seen } = await pages({ ...window, sortOrder, limit: 2, itemUpdateStart: late });
      // Led by the 9 orders updated, fewer than FEW_ORDER_SCAN: counted before the window's first items, which
      // would read the early orders' 7,500 items for nothing on the first page ascending.
      expect([...drivers]).toEqual(['updated-orders']);
      const ids = sortOrder === 'ascending' ? lateIds : [...lateIds].reverse();
      expect(seen).toEqual(ids.map((id) => [id, ITEMS]));
      // A closed range: only the orders whose items were updated in its three days.
      const closed = await pages({
        ...window,
        sortOrder,
        limit: 1,
        itemUpdateStart: late + 2 * DAY,
        itemUpdateEnd: late + 5 * DAY,
      });
      expect(closed.seen).toEqual(
        ids.filter((id) => id >= lateIds[2]! && id < lateIds[5]!).map((id) => [id, ITEMS]),
      );
    },
  );

  it.each(['ascending', 'descending'] as const)(
    "finds none of a vendor's orders after their last update, %s, reading only the later orders",
    async (sortOrder) => {
      const none = await pages({ ...window, sortOrder, limit: 1, vendorId: 7, itemUpdateStart: late });
      expect(none).toEqual({ drivers: new Set(['updated-orders']), seen: [] });
      const other = await pages({ ...window, sortOrder, limit: 4, vendorId: 8, itemUpdateStart: late + DAY });
      expect([...other.drivers]).toEqual(['updated-orders']);
      const ids = lateIds.slice(1);
      expect(other.seen).toEqual((sortOrder === 'ascending' ? ids : ids.reverse()).map((id) => [id, ITEMS]));
    },
  );
});
