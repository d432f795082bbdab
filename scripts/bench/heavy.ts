// Heavy clients: on a store of --orders orders (generate-orders.ts), one client holds --heavy-orders
// orders of --items items each, priced out a minute after each was placed. Measured through one web process (no
// worker): the heavy search (`vendorId=V&itemUpdateDateStart=T&limit=1`, T reaching only the last 40% of those
// orders, both sort orders in turn) and a cheap one (`limit=1` of another client), p50/p99 side by side, one after
// another; two more shapes of the heavy client whose cost may follow its history rather than the page: its vendor
// none of whose orders match an update range (the range holds the items of a few later orders of another vendor,
// more than the narrow-range path takes), and that update range alone (its matches at the far end of the order
// scan); then `/healthz` (one after another, 10 ms apart) while the heavy client posts a batch of real orders of
// --batch-items items in all (entries of --items items, RATE_LIMIT_PER_S off), with the web's CPU and garbage
// collections by kind during it (its /metrics). Before the batch, the searches no plan bounds (choosePath):
// NARROW_ORDER_SCAN one-item orders of the other vendor added after the later ones, "vendor, none match" reads
// every item of the vendor in the window; `/healthz` and the cheap search (each --iterations, one after another)
// while --concurrent such searches run at once, each in a loop (on SQLite the web reads them on its search
// thread). --write puts the tables into the "Heavy clients" section of BENCHMARKS.md.
//   node --import tsx scripts/bench/heavy.ts [--store sqlite,postgres] [--orders 1000000]
//     [--heavy-orders 200] [--items 250] [--iterations 200] [--batch-items 50000] [--concurrent 4] [--write]
// PostgreSQL: a fresh database on DATABASE_URL's server, or on a private one started here.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSigningClient, type SigningClient } from '../../test/helpers/signed-client.js';
import { addCard, createClient } from '../../src/services/client-keys.js';
import { ADDRESS } from './buyer.js';
import {
  RUNTIME,
  cpuAndGc,
  cpuAndGcSince,
  startEntry,
  stopProcess,
  waitForWeb,
  runBench,
} from './processes.js';
import {
  freshStore,
  parseStoreKinds,
  orderServiceEnv,
  stopPostgresServer,
  type BenchStore,
  type StoreKind,
  stopServersOnInterrupt,
} from './stores.js';
import { printSection } from './benchmarks-file.js';
import { BENCH_STORE_SHAPE, generateOrders } from './generate-orders.js';
import { NARROW_ORDER_SCAN, NARROW_UPDATE_SCAN } from '../../src/store/shared/search-plan.js';
import { heavyOrder, storeHeavyOrders } from '../../test/helpers/heavy-orders.js';
import { LOAD_VENDOR } from './load-mix.js';
import { ensureRedis, freePort, type RunningRedis } from '../redis.js';
import { benchArgs } from './bench-args.js';

const values = benchArgs({
  store: 'sqlite,postgres',
  orders: '1000000',
  'heavy-orders': '200',
  items: '250',
  iterations: '200',
  'batch-items': '50000',
  concurrent: '4',
  write: false,
});
const ORDERS = Number(values.orders);
const HEAVY_ORDERS = Number(values['heavy-orders']);
const ITEMS = Number(values.items);
const ITERATIONS = Number(values.iterations);
const BATCH_ENTRIES = Math.max(1, Math.round(Number(values['batch-items']) / ITEMS));
const CONCURRENT = Number(values.concurrent);
const say = (line: string) => process.stderr.write(`[bench-heavy] ${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The listing every heavy order and the batch buy: stock enough for all of them. */
const HEAVY_VENDOR = LOAD_VENDOR;
const HEAVY_LISTING = {
  listingId: 990_901,
  vendorId: HEAVY_VENDOR.vendorId,
  title: 'Heavy title',
  isbn: '9780000099001',
  priceCents: 999,
  quantity: 100_000_000,
};

/** Another vendor's listing: the heavy client's later orders, updated after all the others. */
const LATE_VENDOR = { ...HEAVY_VENDOR, vendorId: HEAVY_VENDOR.vendorId + 1, name: 'Later Books' };
const LATE_LISTING = {
  ...HEAVY_LISTING,
  listingId: HEAVY_LISTING.listingId + 1,
  vendorId: LATE_VENDOR.vendorId,
  isbn: '9780000099002',
};
/** Enough later orders that their items are more than the narrow update range's path reads. */
const LATE_ORDERS = Math.floor(NARROW_UPDATE_SCAN / ITEMS) + 1;

interface Latency {
  p50: number;
  p99: number;
  max: number;
  count: number;
}

const latency = (ms: number[]): Latency => {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1)!, count: sorted.length };
};

interface Result {
  kind: StoreKind;
  cheap: Latency;
  heavy: Latency;
  vendorNone: Latency;
  lateRange: Latency;
  healthz: Latency;
  batchSeconds: number;
  batchStatus: number;
  /** The web's CPU and garbage collections during the batch (its /metrics). */
  batchWeb: string;
  /** While CONCURRENT unbounded searches run at once. */
  unbounded: { healthz: Latency; cheap: Latency; searches: Latency; statuses: string };
}

async function prepare(kind: StoreKind) {
  const store = await freshStore(kind, 'bench_heavy');
  say(`${kind}: generating ${ORDERS.toLocaleString('en')} orders`);
  await generateOrders(store, { orders: ORDERS, ...BENCH_STORE_SHAPE });
  const opened = await store.open('bench');
  try {
    await opened.catalog.importCatalog([HEAVY_VENDOR, LATE_VENDOR], [HEAVY_LISTING, LATE_LISTING]);
    const clientOf = async (name: string) => {
      const client = await createClient(opened.clients, name, Date.now());
      const card = await addCard(opened.clients, client.clientId, false, Date.now());
      return { ...client, ccToken: card.token, cardId: (await opened.clients.findCard(card.token))!.cardId };
    };
    const heavy = await clientOf('heavy client');
    const cheap = await clientOf('cheap client');
    const t0 = Date.now() - 10 * 86_400_000;
    const probe = store.probe();
    try {
      const shape = { listing: HEAVY_LISTING, t0, address: ADDRESS };
      const h = {
        clientId: heavy.clientId,
        cardId: heavy.cardId,
        orders: HEAVY_ORDERS,
        items: ITEMS,
        ...shape,
      };
      // Stored first, priced out with the others by storeHeavyOrders: created (and updated) after all of them.
      for (let i = 0; i < LATE_ORDERS; i++)
        await opened.orders.accept(heavyOrder({ ...h, listing: LATE_LISTING }, HEAVY_ORDERS + i));
      await storeHeavyOrders(opened, (sql) => probe.exec(sql), h);
      const c = { clientId: cheap.clientId, cardId: cheap.cardId, orders: 20, items: 1, ...shape };
      for (let i = 0; i < c.orders; i++) await opened.orders.accept(heavyOrder(c, i));
    } finally {
      await probe.close();
    }
    const from = new Date(t0 + Math.floor(HEAVY_ORDERS * 0.6) * 1000 + 60_000).toISOString();
    const late = new Date(t0 + HEAVY_ORDERS * 1000 + 60_000).toISOString();
    return { store, heavy, cheap, from, late };
  } finally {
    await opened.close();
  }
}

async function timedSearches(client: SigningClient, paths: string[], count: number): Promise<Latency> {
  const ms: number[] = [];
  for (let i = 0; i < count; i++) {
    const began = performance.now();
    const res = await client.request('GET', paths[i % paths.length]!);
    if (res.status !== 200) throw new Error(`search answered ${res.status}: ${JSON.stringify(res.body)}`);
    ms.push(performance.now() - began);
  }
  return latency(ms);
}

async function runOnce(redis: RunningRedis, kind: StoreKind): Promise<Result> {
  const { store, heavy, cheap, from, late } = await prepare(kind);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-heavy-'));
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const metricsPort = await freePort();
  const metricsUrl = `http://127.0.0.1:${metricsPort}`;
  const web = startEntry(
    'src/server.ts',
    orderServiceEnv(
      store,
      { redisUrl: redis.url, prefix: `benchheavy${process.pid}${kind}`, port },
      {
        LOG_LEVEL: 'warn',
        METRICS_PORT: String(metricsPort),
        MAX_UNSETTLED_ORDERS: '10000000',
        MAX_UNSETTLED_PER_CLIENT: '10000000',
      },
    ),
    path.join(dir, 'web.log'),
  );
  try {
    await waitForWeb(baseUrl, web);
    const heavyClient = createSigningClient({ baseUrl, ...heavy });
    const cheapClient = createSigningClient({ baseUrl, ...cheap });
    const heavyPath = `/v1/orders?vendorId=${HEAVY_VENDOR.vendorId}&itemUpdateDateStart=${from}&limit=1`;
    const heavyPaths = [heavyPath, `${heavyPath}&sortOrder=descending`];
    await timedSearches(cheapClient, ['/v1/orders?limit=1'], 10);
    await timedSearches(heavyClient, heavyPaths, 10);
    const cheapLatency = await timedSearches(cheapClient, ['/v1/orders?limit=1'], ITERATIONS);
    const heavyLatency = await timedSearches(heavyClient, heavyPaths, ITERATIONS);
    const latePath = `/v1/orders?itemUpdateDateStart=${late}&limit=1`;
    const vendorNonePath = `/v1/orders?vendorId=${HEAVY_VENDOR.vendorId}&itemUpdateDateStart=${late}&limit=1`;
    await timedSearches(heavyClient, [vendorNonePath, latePath], 10);
    const vendorNone = await timedSearches(heavyClient, [vendorNonePath], ITERATIONS);
    const lateRange = await timedSearches(heavyClient, [latePath], ITERATIONS);
    say(
      `${kind}: cheap p99 ${cheapLatency.p99.toFixed(1)} ms, heavy p99 ${heavyLatency.p99.toFixed(1)} ms, ` +
        `vendor none p99 ${vendorNone.p99.toFixed(1)} ms, late range p99 ${lateRange.p99.toFixed(1)} ms`,
    );
    await addWideOrders(store, heavy, late);
    // Warmed as the others are (on SQLite this starts the search thread, which then stays while searches come).
    await timedSearches(heavyClient, [vendorNonePath], 10);
    const unbounded = await whileUnbounded(baseUrl, heavyClient, cheapClient, [vendorNonePath]);
    say(
      `${kind}: ${CONCURRENT} unbounded searches at once (${unbounded.statuses}): /healthz p99 ${unbounded.healthz.p99.toFixed(1)} ms, ` +
        `cheap p99 ${unbounded.cheap.p99.toFixed(1)} ms`,
    );
    const batch = {
      orders: Array.from({ length: BATCH_ENTRIES }, (_, i) => ({
        requestId: `heavy-batch-${i}`,
        shipAddr: ADDRESS,
        billAddr: ADDRESS,
        ccToken: heavy.ccToken,
        listings: [{ listingId: HEAVY_LISTING.listingId, quantity: ITEMS }],
        shippingMode: 'S',
        domain: 'bookmarket.com',
      })),
    };
    let posting = true;
    const before = await cpuAndGc(metricsUrl);
    const began = performance.now();
    const posted = heavyClient.request('POST', '/v1/order-batches', batch).finally(() => (posting = false));
    const healthz: number[] = [];
    while (posting) {
      const t = performance.now();
      await fetch(`${baseUrl}/healthz`);
      healthz.push(performance.now() - t);
      await sleep(10);
    }
    const answer = await posted;
    const batchSeconds = (performance.now() - began) / 1000;
    const batchWeb = cpuAndGcSince(before, await cpuAndGc(metricsUrl)).text;
    say(
      `${kind}: batch ${answer.status} in ${batchSeconds.toFixed(1)} s, /healthz p99 ${latency(healthz).p99.toFixed(1)} ms; web ${batchWeb}`,
    );
    return {
      kind,
      cheap: cheapLatency,
      heavy: heavyLatency,
      vendorNone,
      lateRange,
      healthz: latency(healthz),
      batchSeconds,
      batchStatus: answer.status,
      batchWeb,
      unbounded,
    };
  } finally {
    await stopProcess(web);
    await store.remove();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * NARROW_ORDER_SCAN one-item orders of the later vendor, created (and so updated) after `late`: with them the
 * orders updated since `late` are too many to lead, and "vendor, none match" reads the vendor's items in the window.
 */
async function addWideOrders(store: BenchStore, heavy: { clientId: number; cardId: number }, late: string) {
  const opened = await store.open('bench');
  try {
    // Numbered after the heavy client's others (their request ids), created from `late` on, a second apart.
    const first = HEAVY_ORDERS + LATE_ORDERS;
    const t0 = Date.parse(late) - first * 1000;
    const h = { ...heavy, listing: LATE_LISTING, t0, orders: 0, items: 1, address: ADDRESS };
    for (let i = 0; i < NARROW_ORDER_SCAN; i += 20)
      await opened.orders.acceptMany(
        Array.from({ length: Math.min(20, NARROW_ORDER_SCAN - i) }, (_, k) => heavyOrder(h, first + i + k)),
      );
  } finally {
    await opened.close();
  }
}

/** `/healthz` and the cheap search, ITERATIONS each one after another, while CONCURRENT loops of `paths` run. */
async function whileUnbounded(
  baseUrl: string,
  heavyClient: SigningClient,
  cheapClient: SigningClient,
  paths: string[],
): Promise<Result['unbounded']> {
  let measuring = true;
  const searches: number[] = [];
  const statuses = new Map<number, number>();
  const loops = Array.from({ length: CONCURRENT }, async (_, k) => {
    for (let i = k; measuring; i++) {
      const began = performance.now();
      const res = await heavyClient.request('GET', paths[i % paths.length]!);
      searches.push(performance.now() - began);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    }
  });
  const healthz: number[] = [];
  const measured = Promise.all([
    (async () => {
      for (let i = 0; i < ITERATIONS; i++) {
        const t = performance.now();
        await fetch(`${baseUrl}/healthz`);
        healthz.push(performance.now() - t);
      }
    })(),
    timedSearches(cheapClient, ['/v1/orders?limit=1'], ITERATIONS),
  ]);
  const [, cheap] = await measured.finally(() => (measuring = false));
  await Promise.all(loops);
  return {
    healthz: latency(healthz),
    cheap,
    searches: latency(searches),
    statuses: [...statuses].map(([status, n]) => `${n} × ${status}`).join(', '),
  };
}

function report(results: Result[], load: [number, number]): string {
  const f = (l: Latency) => `${l.p50.toFixed(1)} / ${l.p99.toFixed(1)}`;
  const command = `${RUNTIME === 'tsx' ? 'BENCH_RUNTIME=tsx ' : ''}node --import tsx scripts/bench/heavy.ts --store ${results.map((r) => r.kind).join(',')} --orders ${ORDERS} --heavy-orders ${HEAVY_ORDERS} --items ${ITEMS} --iterations ${ITERATIONS} --batch-items ${BATCH_ENTRIES * ITEMS} --concurrent ${CONCURRENT} --write`;
  return [
    `Command: \`${command}\``,
    '',
    `One web process (no worker) on a store of ${ORDERS.toLocaleString('en')} orders (scripts/bench/generate-orders.ts) where`,
    `one client holds ${HEAVY_ORDERS} orders of ${ITEMS} items each, priced out. Heavy search:`,
    '`vendorId=V&itemUpdateDateStart=T&limit=1`, T reaching the last 40% of those orders, both sort orders in turn;',
    `cheap search: another client's \`limit=1\`; ${ITERATIONS} of each, one after another. The client also holds`,
    `${LATE_ORDERS} later orders of ${ITEMS} items of another vendor, updated after all the others, and two more shapes`,
    'are searched: "vendor, none match" (`vendorId=V&itemUpdateDateStart=L&limit=1`, L after every update of V\'s',
    'orders: empty) and "late range" (`itemUpdateDateStart=L&limit=1`: only the later orders). Then `/healthz`, one',
    `after another 10 ms apart, while the heavy client posts a batch of ${BATCH_ENTRIES} real orders of ${ITEMS} items`,
    `(${(BATCH_ENTRIES * ITEMS).toLocaleString('en')} items); the web's CPU and garbage collections by kind during it from its /metrics. Load average ${load[0].toFixed(1)} at the start, ${load[1].toFixed(1)} at the end.`,
    '',
    '| store | cheap search p50 / p99 (ms) | heavy search p50 / p99 (ms) | heavy / cheap p99 | vendor, none match p50 / p99 (ms) | late range p50 / p99 (ms) | /healthz during the batch p50 / p99 / max (ms) | batch (s, HTTP status) | web during the batch |',
    '|---|---|---|---|---|---|---|---|---|',
    ...results.map(
      (r) =>
        `| ${r.kind} | ${f(r.cheap)} | ${f(r.heavy)} | ${(r.heavy.p99 / r.cheap.p99).toFixed(1)}× | ${f(r.vendorNone)} | ${f(r.lateRange)} | ${f(r.healthz)} / ${r.healthz.max.toFixed(1)} | ${r.batchSeconds.toFixed(1)}, ${r.batchStatus} | ${r.batchWeb} |`,
    ),
    '',
    `Then ${NARROW_ORDER_SCAN.toLocaleString('en')} one-item orders of the other vendor, created after L: "vendor, none match"`,
    'is then a search no plan bounds (it reads every item of V in the window; on SQLite the web reads it on its search',
    `thread), ${CONCURRENT} of them at once, each in a loop, while \`/healthz\` and the cheap search run ${ITERATIONS} times each, one`,
    'after another.',
    '',
    `| store | /healthz p50 / p99 / max (ms) | cheap search p50 / p99 / max (ms) | unbounded searches p50 / p99 (ms) | their answers |`,
    '|---|---|---|---|---|',
    ...results.map(
      (r) =>
        `| ${r.kind} | ${f(r.unbounded.healthz)} / ${r.unbounded.healthz.max.toFixed(1)} | ${f(r.unbounded.cheap)} / ${r.unbounded.cheap.max.toFixed(1)} | ${f(r.unbounded.searches)} | ${r.unbounded.statuses} |`,
    ),
  ].join('\n');
}

async function main() {
  const redis = await ensureRedis();
  stopServersOnInterrupt(redis);
  const load0 = os.loadavg()[0]!;
  const results: Result[] = [];
  try {
    for (const kind of parseStoreKinds(values.store)) results.push(await runOnce(redis, kind));
  } finally {
    await redis.stop();
    await stopPostgresServer();
  }
  const body = report(results, [load0, os.loadavg()[0]!]);
  printSection('Heavy clients', body, values.write);
}

runBench(main);
