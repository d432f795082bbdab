// Fills a fresh SQLite store with a year of synthetic orders for the search benchmark:
//   npx tsx scripts/generate-orders.ts [--db data/bench.db] [--orders 1000000] [--clients 2000]
//     [--vendors 1000] [--listings 50000] [--seed 1]
// Orders and clients are skewed as on a real marketplace (a few large clients, a long tail), items follow
// the status lifecycle of CONTRACT.md section 8, ids grow with creation time. Prints a JSON summary and
// keeps it in <db>.json.
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { openDb, type Db } from '../src/store/db.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const BATCH = 20_000;

const { values } = parseArgs({
  options: {
    db: { type: 'string', default: 'data/bench.db' },
    orders: { type: 'string', default: '1000000' },
    clients: { type: 'string', default: '2000' },
    vendors: { type: 'string', default: '1000' },
    listings: { type: 'string', default: '50000' },
    seed: { type: 'string', default: '1' },
  },
});
const ORDERS = Number(values.orders);
const CLIENTS = Number(values.clients);
const VENDORS = Number(values.vendors);
const LISTINGS = Number(values.listings);

/** mulberry32: deterministic, so two runs build the same store. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = prng(Number(values.seed));
const int = (below: number) => Math.floor(rnd() * below);

/** Draws 1..n with weight 1/k^s: rank 1 is the largest client (or best-selling listing). */
function zipf(n: number, s: number): () => number {
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

function fillCatalog(db: Db, now: number): void {
  const vendor = db.prepare(
    "INSERT INTO vendors (vendor_id, name, country, currency) VALUES (?, ?, 'USA', 'USD')",
  );
  const listing = db.prepare(
    'INSERT INTO listings (listing_id, vendor_id, title, isbn, price_cents, stock) VALUES (?, ?, ?, ?, ?, 1000)',
  );
  const client = db.prepare(
    'INSERT INTO clients (client_id, name, access_key, secret_key, created_at) VALUES (?, ?, ?, ?, ?)',
  );
  const card = db.prepare('INSERT INTO cards (card_id, client_id, token, created_at) VALUES (?, ?, ?, ?)');
  db.transaction(() => {
    for (let v = 1; v <= VENDORS; v++) vendor.run(v, `Vendor ${v}`);
    for (let l = 1; l <= LISTINGS; l++) {
      listing.run(
        l,
        1 + ((l * 7919) % VENDORS),
        `Title ${l}`,
        `978${String(l).padStart(10, '0')}`,
        500 + int(3000),
      );
    }
    for (let c = 1; c <= CLIENTS; c++) {
      client.run(c, `Client ${c}`, `AKBENCH${c}`, `sk_bench_${c}`, now - 400 * DAY);
      card.run(c, c, `cc_bench_${c}`, now - 400 * DAY);
    }
  })();
}

interface ItemPlan {
  status: number;
  updatedAt: number;
}

/** Where an item's lifecycle stands at `now`: the last status and when it was set. */
function lifecycle(createdAt: number, now: number): ItemPlan {
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

function fillOrders(db: Db, now: number): void {
  const start = now - 365 * DAY;
  const clientOf = zipf(CLIENTS, 0.9);
  const listingOf = zipf(LISTINGS, 0.8);
  const references = new Uint32Array(CLIENTS + 1);
  const order = db.prepare(
    `INSERT INTO orders (order_id, client_id, request_id, request_hash, reference_id, domain, currency,
       shipping_mode, ship_addr, bill_addr, card_id, tax_cents, tax_model, total_cents, phase, created_at)
     VALUES (?, ?, ?, 'generated', ?, ?, ?, 'S', ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const item = db.prepare(
    `INSERT INTO order_items (order_item_id, order_id, client_id, order_created_at, line_no, listing_id, vendor_id,
       title, isbn, line_quantity, min_days, max_days, cost_cents, shipcost_cents, status, updated_at,
       status_changed_at, shipping_company, tracking_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 2, 7, ?, ?, ?, ?, ?, ?, ?)`,
  );
  let itemId = 0;
  const batch = db.transaction((from: number, to: number) => {
    for (let orderId = from; orderId < to; orderId++) {
      // Creation times rise with the id, a few seconds of jitter apart, over the whole year.
      const createdAt = start + Math.floor(((orderId - 1) * 365 * DAY) / ORDERS) + int(5_000);
      const clientId = clientOf();
      const [domain, currency] = DOMAINS[int(DOMAINS.length)]!;
      const address = ADDRESSES[int(ADDRESSES.length)]!;
      const reference = rnd() < 0.4 ? `PO-${clientId}-${++references[clientId]!}` : null;
      const queued = now - createdAt < 2 * 60_000;
      order.run(
        orderId,
        clientId,
        `gen-${orderId}`,
        reference,
        domain,
        currency,
        address,
        address,
        clientId,
        int(300),
        'SALES_TAX',
        2000 + int(8000),
        queued ? 'queued' : 'settled',
        createdAt,
      );
      for (let line = 0, lines = 1 + int(4); line < lines; line++) {
        const listingId = listingOf();
        const vendorId = 1 + ((listingId * 7919) % VENDORS);
        const quantity = rnd() < 0.75 ? 1 : 2;
        for (let copy = 0; copy < quantity; copy++) {
          const { status, updatedAt } = lifecycle(createdAt, now);
          const shipped = status === 35 || status === 24;
          item.run(
            ++itemId,
            orderId,
            clientId,
            createdAt,
            line,
            listingId,
            vendorId,
            `Title ${listingId}`,
            `978${String(listingId).padStart(10, '0')}`,
            quantity,
            500 + int(3000),
            100 + int(400),
            status,
            updatedAt,
            updatedAt,
            shipped ? 'UPS' : null,
            shipped ? `1Z${orderId}${copy}` : null,
          );
        }
      }
    }
  });
  for (let from = 1; from <= ORDERS; from += BATCH) {
    batch(from, Math.min(ORDERS + 1, from + BATCH));
    if ((from - 1) % 200_000 === 0) process.stderr.write(`  ${from - 1} orders\n`);
  }
}

const began = Date.now();
const now = Date.now();
fs.rmSync(values.db, { force: true });
fs.rmSync(`${values.db}-wal`, { force: true });
fs.rmSync(`${values.db}-shm`, { force: true });
fs.rmSync(`${values.db}.json`, { force: true });
const db = openDb(values.db);
// A throwaway fill: no fsync, rows already consistent, index pages kept in memory.
db.pragma('synchronous = OFF');
db.pragma('foreign_keys = OFF');
db.pragma('cache_size = -2000000');
fillCatalog(db, now);
fillOrders(db, now);
db.pragma('wal_checkpoint(TRUNCATE)');
const count = (sql: string) => db.prepare(sql).pluck().get() as number;
const largest = db
  .prepare(
    'SELECT client_id AS clientId, count(*) AS orders FROM orders GROUP BY client_id ORDER BY 2 DESC LIMIT 1',
  )
  .get();
const summary = JSON.stringify({
  db: values.db,
  orders: count('SELECT count(*) FROM orders'),
  items: count('SELECT count(*) FROM order_items'),
  clients: CLIENTS,
  vendors: VENDORS,
  listings: LISTINGS,
  largestClient: largest,
  from: new Date(now - 365 * DAY).toISOString(),
  to: new Date(now).toISOString(),
  seconds: Math.round((Date.now() - began) / 1000),
  bytes: fs.statSync(values.db).size,
  seed: Number(values.seed),
});
// Kept beside the store so the benchmark can say how it was made.
fs.writeFileSync(`${values.db}.json`, `${summary}\n`);
console.log(summary);
db.close();
