// Fills a fresh store with a year of synthetic orders for the search benchmark:
//   npx tsx scripts/bench/generate-orders.ts [--store sqlite|postgres] [--db data/bench.db] [--orders 1000000]
//     [--clients 2000] [--vendors 1000] [--listings 50000] [--seed 1]
// SQLite: the file --db, replaced. PostgreSQL: the empty database at DATABASE_URL (the default store when it is
// set), migrated here. Orders and clients are skewed as on a real marketplace (a few large clients, a long
// tail), items follow the status lifecycle of docs/api.md#item-statuses-and-moves, ids grow with creation time; the same
// seed gives the same rows on both stores. Rows go in as multi-row INSERTs through the store's probe. Prints a
// JSON summary (and keeps it in <db>.json for SQLite).
import fs from 'node:fs';
import type { Probe } from '../../test/helpers/store.probe.js';
import { defaultStoreKind, parseStoreKinds, storeFromEnv, type BenchStore } from './stores.js';
import { benchArgs } from './bench-args.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Orders per transaction. */
const BATCH = 20_000;
/** Rows per INSERT statement. */
const ROWS_PER_INSERT = 2_000;

export interface GenerateOptions {
  orders: number;
  clients: number;
  vendors: number;
  listings: number;
  seed: number;
}

/** The store every benchmark fills (and this script's defaults): clients, vendors and listings of a large marketplace. */
export const BENCH_STORE_SHAPE = { clients: 2000, vendors: 1000, listings: 50_000, seed: 1 } as const;

export interface GenerateSummary {
  store: string;
  orders: number;
  items: number;
  clients: number;
  vendors: number;
  listings: number;
  largestClient: { clientId: number; orders: number };
  from: string;
  to: string;
  seconds: number;
  bytes: number;
  seed: number;
}

/** mulberry32: deterministic, so two runs build the same store. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Draws 1..n with weight 1/k^s: rank 1 is the largest client (or best-selling listing). */
function zipf(rnd: () => number, n: number, s: number): () => number {
  const cumulative = new Float64Array(n);
  let total = 0;
  for (let k = 1; k <= n; k++) cumulative[k - 1] = total += 1 / k ** s;
  return () => {
    const target = rnd() * total;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < target) lo = mid + 1;
      else hi = mid;
    }
    return lo + 1;
  };
}

const DOMAINS = [
  ['bookmarket.com', 'USD'],
  ['bookmarket.co.uk', 'GBP'],
  ['bookmarket.de', 'EUR'],
  ['bookmarket.fr', 'EUR'],
  ['libromercado.com', 'EUR'],
] as const;
const ADDRESSES = ['CA', 'NY', 'TX', 'WA'].map((state, i) =>
  JSON.stringify({
    name: `Reader ${i}`,
    address1: `${100 + i} Market Street`,
    city: 'Springfield',
    provstate: state,
    country: 'USA',
    zipcode: `9410${i}`,
    phone: `+1 415 555 01${i}0`,
  }),
);

type Value = string | number | null;

/** A SQL literal both SQLite and PostgreSQL read alike (PostgreSQL casts a string to the column's type). */
const literal = (v: Value): string =>
  v === null ? 'NULL' : typeof v === 'number' ? String(v) : `'${v.replace(/'/g, "''")}'`;

/** Multi-row INSERTs of `rows` into `table`, ROWS_PER_INSERT at a time. */
function inserts(table: string, columns: string, rows: Value[][]): string {
  const statements: string[] = [];
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    const values = rows
      .slice(i, i + ROWS_PER_INSERT)
      .map((row) => `(${row.map(literal).join(',')})`)
      .join(',\n');
    statements.push(`INSERT INTO ${table} (${columns}) VALUES ${values};`);
  }
  return statements.join('\n');
}

const ORDER_COLUMNS = `order_id, client_id, request_id, request_hash, reference_id, domain, currency, shipping_mode,
  ship_addr, bill_addr, card_id, tax_cents, tax_model, total_cents, phase, created_at, items_updated_at`;
const ITEM_COLUMNS = `order_item_id, order_id, client_id, order_created_at, line_no, listing_id, vendor_id, title,
  isbn, line_quantity, min_days, max_days, cost_cents, shipcost_cents, status, updated_at, status_changed_at,
  shipping_company, tracking_id`;

/** The rows of a synthetic store, drawn in one fixed order from one seeded generator. */
function createRows(o: GenerateOptions, now: number) {
  const rnd = prng(o.seed);
  const int = (below: number) => Math.floor(rnd() * below);
  const vendorOf = (listingId: number) => 1 + ((listingId * 7919) % o.vendors);

  function catalogSql(): string {
    const vendors = Array.from({ length: o.vendors }, (_, i) => [i + 1, `Vendor ${i + 1}`, 'USA', 'USD']);
    const listings = Array.from({ length: o.listings }, (_, i) => {
      const l = i + 1;
      return [l, vendorOf(l), `Title ${l}`, `978${String(l).padStart(10, '0')}`, 500 + int(3000), 1000];
    });
    // Placeholder keys and card tokens, neither sealed nor hashed: these clients only search, in process.
    const clients = Array.from({ length: o.clients }, (_, i) => {
      const c = i + 1;
      return [c, `Client ${c}`, `AKBENCH${c}`, `sk_bench_${c}`, now - 400 * DAY];
    });
    const cards = Array.from({ length: o.clients }, (_, i) => [
      i + 1,
      i + 1,
      `cc_bench_${i + 1}`,
      now - 400 * DAY,
    ]);
    return [
      inserts('vendors', 'vendor_id, name, country, currency', vendors),
      inserts('listings', 'listing_id, vendor_id, title, isbn, price_cents, stock', listings),
      inserts('clients', 'client_id, name, access_key, secret_key, created_at', clients),
      inserts('cards', 'card_id, client_id, token, created_at', cards),
    ].join('\n');
  }

  /** Where an item's lifecycle stands at `now`: the last status and when it was set. */
  function lifecycle(createdAt: number): { status: number; updatedAt: number } {
    const age = now - createdAt;
    if (age < 2 * 60_000) return { status: 1, updatedAt: createdAt };
    const roll = rnd();
    const settled = createdAt + 1_000 + int(9_000);
    if (roll < 0.05) return { status: [14, 19, 53][int(3)]!, updatedAt: settled };
    const shippedAt = createdAt + DAY + int(3 * DAY);
    if (roll < 0.08 && now - createdAt > 30 * DAY)
      return { status: 24, updatedAt: createdAt + 10 * DAY + int(50 * DAY) };
    if (roll < 0.1) return { status: 17, updatedAt: Math.min(now, createdAt + int(2 * DAY)) };
    return shippedAt < now ? { status: 35, updatedAt: shippedAt } : { status: 5, updatedAt: settled };
  }

  const start = now - 365 * DAY;
  const clientOf = zipf(rnd, o.clients, 0.9);
  const listingOf = zipf(rnd, o.listings, 0.8);
  const references = new Uint32Array(o.clients + 1);
  let itemId = 0;

  /** The INSERTs of orders [from, to) and their items. */
  function ordersSql(from: number, to: number): string {
    const orders: Value[][] = [];
    const items: Value[][] = [];
    for (let orderId = from; orderId < to; orderId++) {
      // Creation times rise with the id, a few seconds of jitter apart, over the whole year.
      const createdAt = start + Math.floor(((orderId - 1) * 365 * DAY) / o.orders) + int(5_000);
      const clientId = clientOf();
      const [domain, currency] = DOMAINS[int(DOMAINS.length)]!;
      const address = ADDRESSES[int(ADDRESSES.length)]!;
      const reference = rnd() < 0.4 ? `PO-${clientId}-${++references[clientId]!}` : null;
      const phase = now - createdAt < 2 * 60_000 ? 'queued' : 'settled';
      const taxCents = int(300);
      const totalCents = 2000 + int(8000);
      const order: Value[] = [
        ...[
          orderId,
          clientId,
          `gen-${orderId}`,
          'generated',
          reference,
          domain,
          currency,
          'S',
          address,
          address,
        ],
        ...[clientId, taxCents, 'SALES_TAX', totalCents, phase, createdAt],
      ];
      let latest = createdAt;
      for (let line = 0, lines = 1 + int(4); line < lines; line++) {
        const listingId = listingOf();
        const quantity = rnd() < 0.75 ? 1 : 2;
        for (let copy = 0; copy < quantity; copy++) {
          const { status, updatedAt } = lifecycle(createdAt);
          latest = Math.max(latest, updatedAt);
          const shipped = status === 35 || status === 24;
          const cost = 500 + int(3000);
          const shipcost = 100 + int(400);
          items.push([
            ...[++itemId, orderId, clientId, createdAt, line, listingId, vendorOf(listingId)],
            ...[
              `Title ${listingId}`,
              `978${String(listingId).padStart(10, '0')}`,
              quantity,
              2,
              7,
              cost,
              shipcost,
            ],
            ...[status, updatedAt, updatedAt, shipped ? 'UPS' : null, shipped ? `1Z${orderId}${copy}` : null],
          ]);
        }
      }
      // What the store's trigger keeps when items are updated (items-updated.migration.ts): null if none was.
      orders.push([...order, latest > createdAt ? latest : null]);
    }
    return `${inserts('orders', ORDER_COLUMNS, orders)}\n${inserts('order_items', ITEM_COLUMNS, items)}`;
  }

  return { catalogSql, ordersSql };
}

/** What every batch runs first on PostgreSQL: no wait for the WAL, and no FK triggers when we may skip them. */
async function postgresBatchSettings(probe: Probe): Promise<string> {
  const base = 'SET LOCAL synchronous_commit = off;';
  // Rows are consistent by construction; only a superuser may skip the foreign-key triggers.
  const superuser = await probe.scalar<boolean>('SELECT rolsuper FROM pg_roles WHERE rolname = current_user');
  return superuser ? `${base} SET LOCAL session_replication_role = replica;` : base;
}

/** What every batch runs first on SQLite: this connection's settings, set once. */
async function sqliteSettings(probe: Probe): Promise<string> {
  // A throwaway fill: no fsync, rows already consistent, index pages kept in memory.
  await probe.exec('PRAGMA synchronous = OFF; PRAGMA foreign_keys = OFF; PRAGMA cache_size = -2000000');
  return '';
}

/** Fills the empty store `target` (migrated here) and returns what it made. */
export async function generateOrders(target: BenchStore, o: GenerateOptions): Promise<GenerateSummary> {
  const began = Date.now();
  const now = Date.now();
  const store = await target.open('generate-orders');
  await store.close();
  const probe = target.probe();
  try {
    if ((await probe.scalar('SELECT count(*) FROM orders')) > 0)
      throw new Error('the store already has orders: generate into an empty one');
    const postgres = target.kind === 'postgres';
    const settings = postgres ? await postgresBatchSettings(probe) : await sqliteSettings(probe);
    const rows = createRows(o, now);
    await probe.exec(`BEGIN; ${settings}\n${rows.catalogSql()}\nCOMMIT;`);
    // The next batch is drawn while the server writes the previous one.
    let writing: Promise<void> = Promise.resolve();
    for (let from = 1; from <= o.orders; from += BATCH) {
      const sql = `BEGIN; ${settings}\n${rows.ordersSql(from, Math.min(o.orders + 1, from + BATCH))}\nCOMMIT;`;
      await writing;
      writing = probe.exec(sql);
      if ((from - 1) % 200_000 === 0) process.stderr.write(`  ${from - 1} orders\n`);
    }
    await writing;
    await finish(probe, postgres);
    return await summarize(probe, target, o, now, began);
  } finally {
    await probe.close();
  }
}

/** Identity sequences past the ids written, statistics and the visibility map (index-only scans) up to date. */
async function finish(probe: Probe, postgres: boolean): Promise<void> {
  if (!postgres) {
    await probe.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    return;
  }
  for (const [table, column] of [
    ['clients', 'client_id'],
    ['cards', 'card_id'],
    ['orders', 'order_id'],
    ['order_items', 'order_item_id'],
  ])
    await probe.exec(
      `SELECT setval(pg_get_serial_sequence('${table}', '${column}'), (SELECT max(${column}) FROM ${table}))`,
    );
  await probe.exec('VACUUM (ANALYZE)');
}

async function summarize(
  probe: Probe,
  target: BenchStore,
  o: GenerateOptions,
  now: number,
  began: number,
): Promise<GenerateSummary> {
  const largest = (await probe.get<{ clientId: number; orders: number }>(
    'SELECT client_id AS "clientId", count(*) AS orders FROM orders GROUP BY client_id ORDER BY 2 DESC LIMIT 1',
  ))!;
  const bytes =
    target.kind === 'postgres'
      ? await probe.scalar('SELECT pg_database_size(current_database())')
      : fs.statSync((target.env as { DB_PATH: string }).DB_PATH).size;
  return {
    store: target.kind === 'postgres' ? 'postgres' : (target.env as { DB_PATH: string }).DB_PATH,
    orders: await probe.scalar('SELECT count(*) FROM orders'),
    items: await probe.scalar('SELECT count(*) FROM order_items'),
    clients: o.clients,
    vendors: o.vendors,
    listings: o.listings,
    largestClient: { clientId: Number(largest.clientId), orders: Number(largest.orders) },
    from: new Date(now - 365 * DAY).toISOString(),
    to: new Date(now).toISOString(),
    seconds: Math.round((Date.now() - began) / 1000),
    bytes,
    seed: o.seed,
  };
}

async function main(): Promise<void> {
  const values = benchArgs({
    store: defaultStoreKind(),
    db: 'data/bench.db',
    orders: '1000000',
    clients: String(BENCH_STORE_SHAPE.clients),
    vendors: String(BENCH_STORE_SHAPE.vendors),
    listings: String(BENCH_STORE_SHAPE.listings),
    seed: String(BENCH_STORE_SHAPE.seed),
  });
  const [kind] = parseStoreKinds(values.store);
  if (kind === 'postgres' && !process.env.DATABASE_URL)
    throw new Error('--store postgres fills the empty database at DATABASE_URL: set it');
  if (kind === 'sqlite')
    for (const suffix of ['', '-wal', '-shm', '.json']) fs.rmSync(`${values.db}${suffix}`, { force: true });
  const target = storeFromEnv(
    kind === 'postgres' ? process.env : { ...process.env, DATABASE_URL: undefined, DB_PATH: values.db },
  );
  const summary = await generateOrders(target, {
    orders: Number(values.orders),
    clients: Number(values.clients),
    vendors: Number(values.vendors),
    listings: Number(values.listings),
    seed: Number(values.seed),
  });
  // Kept beside the store so the benchmark can say how it was made.
  if (kind === 'sqlite') fs.writeFileSync(`${values.db}.json`, `${JSON.stringify(summary)}\n`);
  console.log(JSON.stringify(summary));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    process.stderr.write(`generate-orders: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
