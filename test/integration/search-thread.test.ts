// Issue 41: on SQLite a search whose cost the plan cannot bound (an update range with no narrow side, sparse
// matches: choosePath's `bounded: false`) is read on the search thread, off the web's event loop. SQLite only: on
// PostgreSQL the server runs every statement apart from the web already, under DATABASE_TIMEOUT_MS. The path is
// forced by caps of 0 (a store this small takes it only so), and a test-only gate holds the thread's searches:
// nothing here waits on time but the deadline itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/http/app.js';
import type { SearchStore } from '../../src/store/port/store.port.js';
import { sqliteSearch } from '../../src/store/sqlite/search.sqlite.js';
import {
  GATE_OPEN,
  GATE_SEARCHES,
  GATE_THREADS,
  searchGate,
  type SearchGate,
} from '../../src/store/sqlite/search-thread.js';
import { openDb, type Db } from '../../src/store/sqlite/sqlite.db.js';
import { LISTINGS, VENDORS } from '../helpers/fixtures.js';
import { storeHeavyClient } from '../helpers/heavy-client.js';
import { TEST_STORE } from '../helpers/test-store.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';
import { until } from '../helpers/wait.js';

const UNBOUNDED = { narrowOrderScan: 0, narrowUpdateScan: 0, denseScan: 0 };
const ORDERS = 7;
const T0 = Date.now() - 10 * 86_400_000;
const listing = LISTINGS[0]!;
// Items priced out a minute after each order: all of them updated since the range's start.
const RANGE = `itemUpdateDateStart=${new Date(T0).toISOString()}`;

type Page = { orders: { orderId: number }[]; metadata: { next?: string } };

const open = (gate: SearchGate) => {
  Atomics.store(gate, GATE_OPEN, 1);
  Atomics.notify(gate, GATE_OPEN);
};
const searchesTaken = (gate: SearchGate, n: number) =>
  until(() => Atomics.load(gate, GATE_SEARCHES) >= n, 30_000, `${n} searches on the thread`);

describe.runIf(TEST_STORE === 'sqlite')('searches the plan cannot bound, on SQLite', () => {
  let service: TestService;
  let heavy: Credentials;
  let other: Credentials;
  let db: Db;
  const searches: { close(): void }[] = [];

  beforeAll(async () => {
    service = await createTestService();
    await service.importCatalog(VENDORS, LISTINGS);
    heavy = await service.client('heavy searcher');
    other = await service.client('another client');
    for (const creds of [heavy, other])
      await storeHeavyClient(service, creds, { listing, t0: T0, orders: ORDERS, items: 3 });
    // Priced out (53), at a listed cost: what the document says a search answers.
    await service.probe.exec('UPDATE order_items SET status = 53, cost_cents = 100');
    db = openDb(service.config.DB_PATH);
  });
  afterAll(async () => {
    for (const search of searches) search.close();
    db?.close();
    await service?.close({ checkMoney: false });
  });

  /** A search port that reads every update range on the thread, as the web does the unbounded ones. */
  function threaded(timeoutMs: number, gate?: SearchGate) {
    const search = sqliteSearch(db, service.deps.store.search.cursorKey, {
      ...UNBOUNDED,
      searchThread: { timeoutMs, gate },
    });
    searches.push(search);
    return search;
  }
  /** The service's app with its search port replaced. */
  const appWith = (search: SearchStore) =>
    createApp({ ...service.deps, store: { ...service.deps.store, search } });

  /** Every page of `query`, following `next`. */
  async function allPages(app: ReturnType<typeof createApp>, query: string): Promise<Page[]> {
    const pages: Page[] = [];
    for (let next = ''; pages.length <= ORDERS;) {
      const res = await signed(app, heavy, 'GET', `/v1/orders?${query}${next}`);
      expect(res.status).toBe(200);
      pages.push(res.body as Page);
      if (!res.body.metadata.next) break;
      next = `&next=${res.body.metadata.next}`;
    }
    return pages;
  }

  it.each(['ascending', 'descending'])(
    'answers on the thread exactly what the web answers inline, page by page with cursors, %s',
    async (sortOrder) => {
      const gate = searchGate();
      open(gate);
      const app = appWith(threaded(0, gate));
      const query = `${RANGE}&limit=2&sortOrder=${sortOrder}`;
      const inline = await allPages(service.app, query);
      expect(inline.flatMap((p) => p.orders)).toHaveLength(ORDERS);
      expect(await allPages(app, query)).toEqual(inline);
      // Each page was read on the thread, which one thread served.
      expect(Atomics.load(gate, GATE_SEARCHES)).toBe(inline.length);
      expect(Atomics.load(gate, GATE_THREADS)).toBe(1);
    },
  );

  it("leaves /healthz and another client's search answered while it holds one", async () => {
    const gate = searchGate();
    const app = appWith(threaded(0, gate));
    const held = signed(app, heavy, 'GET', `/v1/orders?${RANGE}&limit=1`).then((res) => res);
    await searchesTaken(gate, 1);
    expect((await signed(app, other, 'GET', '/healthz')).status).toBe(200);
    const cheap = await signed(app, other, 'GET', '/v1/orders?limit=1');
    expect(cheap.status).toBe(200);
    expect(cheap.body.orders).toHaveLength(1);
    expect(Atomics.load(gate, GATE_SEARCHES)).toBe(1);
    open(gate);
    const answer = await held;
    expect(answer.status).toBe(200);
    const inline = await signed(service.app, heavy, 'GET', `/v1/orders?${RANGE}&limit=1`);
    expect(answer.body).toEqual(inline.body);
  });

  it('answers 503 5030 with Retry-After past the deadline, and the next search gets a new thread', async () => {
    const gate = searchGate();
    const app = appWith(threaded(1000, gate));
    const held = signed(app, heavy, 'GET', `/v1/orders?${RANGE}&limit=1`).then((res) => res);
    await searchesTaken(gate, 1);
    const late = await held;
    expect(late.status).toBe(503);
    expect(late.headers['svc-status']).toBe('5030');
    expect(Number(late.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    open(gate);
    const next = await signed(app, heavy, 'GET', `/v1/orders?${RANGE}&limit=1`);
    expect(next.status).toBe(200);
    expect(next.body.orders).toHaveLength(1);
    expect(Atomics.load(gate, GATE_THREADS)).toBe(2);
  });

  it("serves clients in turn: one client's waiting searches do not keep another's behind them all", async () => {
    const gate = searchGate();
    const search = threaded(0, gate);
    const answered: string[] = [];
    const criteria = {
      dateStart: T0 - 86_400_000,
      dateEnd: Date.now(),
      sortOrder: 'ascending' as const,
      limit: 1,
      itemUpdateStart: T0,
    };
    const ask = (name: string, clientId: number) =>
      search.search(clientId, criteria).then((page) => {
        answered.push(name);
        return page;
      });
    // A's first is taken by the thread (held), the rest of A's and then B's wait, in this order.
    const asked = [ask('A1', heavy.clientId)];
    await searchesTaken(gate, 1);
    asked.push(ask('A2', heavy.clientId), ask('A3', heavy.clientId), ask('B1', other.clientId));
    open(gate);
    const pages = await Promise.all(asked);
    expect(answered).toEqual(['A1', 'B1', 'A2', 'A3']);
    expect(pages.map((p) => p.orders.length)).toEqual([1, 1, 1, 1]);
  });
});
