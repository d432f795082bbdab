// The bench of reads charged by their cost (read-costs.ts): its store of clients and histories, a web process on it
// with the settings of one measurement, and the cost of a search page.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readCost } from '../../src/http/order-cost.js';
import { addCard, createClient } from '../../src/services/client-keys.js';
import { LISTINGS, US_ADDRESS, VENDORS } from '../../test/helpers/fixtures.js';
import { storeHeavyOrders } from '../../test/helpers/heavy-orders.js';
import type { WIDE_HISTORY } from '../../test/helpers/read-attacks.js';
import { createSigningClient } from '../../test/helpers/signed-client.js';
import { freePort, type RunningRedis } from '../redis.js';
import { startEntry, stopProcess, waitForWeb, waitForWorkers } from './processes.js';
import type { AttackName, PageRow } from './read-costs-report.js';
import { percentile } from './samples.js';
import { freshStore, orderServiceEnv, type BenchStore, type StoreKind } from './stores.js';
import { importBenchListing } from './webhook-clients.js';

/** What a run was asked for (its command line), and its Redis. */
export interface ReadBench {
  seconds: number;
  iterations: number;
  /** The orders of each page-cost client. */
  pageOrders: number;
  wide: typeof WIDE_HISTORY;
  attacks: AttackName[];
  redis: RunningRedis;
  say(line: string): void;
}

const ITEMS_PER_ORDER = [1, 25, 250] as const;
const LIMITS = [20, 100] as const;

/** Stock that A's orders (orderBody: Walden) never run out of, whatever a worker takes. */
const CATALOG = LISTINGS.map((l) => ({ ...l, quantity: 100_000_000 }));
export const T0 = Date.now() - 10 * 86_400_000;

export interface Keys {
  clientId: number;
  accessKey: string;
  secretKey: string;
  ccToken: string;
  cardId: number;
}

export interface Prepared {
  bench: ReadBench;
  store: BenchStore;
  a: Keys;
  /** The client whose orders hold n items, by n; the 250-item one is the page attacker. */
  byItems: Map<number, Keys>;
  wide: Keys;
}

/** A fresh store of `kind`: the catalog, A, the page-cost clients and (for the wide searches) the wide history. */
export async function prepare(kind: StoreKind, bench: ReadBench): Promise<Prepared> {
  const store = await freshStore(kind, 'bench_reads');
  const opened = await store.open('bench');
  const probe = store.probe();
  try {
    await opened.catalog.importCatalog(VENDORS, CATALOG);
    await importBenchListing(opened);
    const client = async (name: string): Promise<Keys> => {
      const created = await createClient(opened.clients, name, Date.now());
      const card = await addCard(opened.clients, created.clientId, false, Date.now());
      return { ...created, ccToken: card.token, cardId: card.cardId };
    };
    const history = (keys: Keys, orders: number, items: number) =>
      storeHeavyOrders(opened, (sql) => probe.exec(sql), {
        clientId: keys.clientId,
        cardId: keys.cardId,
        listing: LISTINGS[0]!,
        t0: T0,
        orders,
        items,
        address: US_ADDRESS,
      });
    const a = await client('victim A');
    const byItems = new Map<number, Keys>();
    for (const items of ITEMS_PER_ORDER) {
      const keys = await client(`orders of ${items} items`);
      bench.say(`${kind}: ${bench.pageOrders} orders of ${items} items`);
      await history(keys, bench.pageOrders, items);
      byItems.set(items, keys);
    }
    const wide = await client('wide history');
    if (bench.attacks.includes('searches')) {
      bench.say(`${kind}: ${bench.wide.orders} orders of ${bench.wide.items} items`);
      await history(wide, bench.wide.orders, bench.wide.items);
    }
    return { bench, store, a, byItems, wide };
  } finally {
    await probe.close();
    await opened.close();
  }
}

/** A web (and `workers` workers) on the bench's store and Redis with `extra` settings, until `fn` is done. */
export async function withWeb<T>(
  p: Prepared,
  extra: Record<string, string>,
  fn: (baseUrl: string, web: ChildProcess) => Promise<T>,
  workers = 0,
): Promise<T> {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-reads-'));
  const logFile = path.join(dir, 'service.log');
  const env = orderServiceEnv(
    p.store,
    { redisUrl: p.bench.redis.url, prefix: `benchreads${process.pid}${p.store.kind}${port}`, port },
    {
      // A's orders are accepted and, with no worker, left queued: backpressure, which counts them, is lifted.
      MAX_UNSETTLED_ORDERS: '10000000',
      MAX_UNSETTLED_PER_CLIENT: '10000000',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      ...extra,
    },
  );
  const web = startEntry('src/server.ts', { ...env, LOG_LEVEL: 'warn' }, logFile);
  const started = [web];
  try {
    for (let i = 0; i < workers; i++) started.push(startEntry('workers/order.worker.ts', env, logFile));
    await waitForWeb(`http://127.0.0.1:${port}`, web);
    if (workers > 0) await waitForWorkers(logFile, workers);
    return await fn(`http://127.0.0.1:${port}`, web);
  } finally {
    await Promise.all(started.map(stopProcess));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The rate limit at its default (docs/api.md#limits): orderServiceEnv turns it off. */
export const DEFAULT_RATE = { RATE_LIMIT_PER_S: '200' };
export const NO_RATE = { RATE_LIMIT_PER_S: '0' };

/** One search of `keys`'s, timed; the orders and items of its page and its size. */
export async function timedSearch(baseUrl: string, keys: Keys, query: string) {
  const client = createSigningClient({ baseUrl, ...keys });
  const began = performance.now();
  const res = await client.request<{ orders: { listings: { orderItems: unknown[] }[] }[] }>('GET', query);
  const ms = performance.now() - began;
  if (res.status !== 200) throw new Error(`${query} answered ${res.status}: ${JSON.stringify(res.body)}`);
  const items = res.body.orders.reduce(
    (n, o) => n + o.listings.reduce((m, l) => m + l.orderItems.length, 0),
    0,
  );
  const bytes = Number(res.headers['content-length'] ?? Buffer.byteLength(JSON.stringify(res.body)));
  return { ms, orders: res.body.orders.length, items, bytes };
}

/** Each page-cost client's first page at each limit, `iterations` times one after another. */
export async function pageCosts(p: Prepared, baseUrl: string): Promise<PageRow[]> {
  const rows: PageRow[] = [];
  for (const itemsPerOrder of ITEMS_PER_ORDER)
    for (const limit of LIMITS) {
      const keys = p.byItems.get(itemsPerOrder)!;
      const query = `/v1/orders?limit=${limit}`;
      let last = await timedSearch(baseUrl, keys, query);
      for (let i = 0; i < 5; i++) last = await timedSearch(baseUrl, keys, query);
      const ms: number[] = [];
      for (let i = 0; i < p.bench.iterations; i++) {
        last = await timedSearch(baseUrl, keys, query);
        ms.push(last.ms);
      }
      rows.push({
        itemsPerOrder,
        limit,
        orders: last.orders,
        items: last.items,
        bytes: last.bytes,
        tokens: readCost(last.items),
        p50: percentile(ms, 50),
        p99: percentile(ms, 99),
      });
    }
  return rows;
}
