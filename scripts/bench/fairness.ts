// Fairness under a greedy client: one client sends the heaviest batches its limits allow (250 dry-run orders of
// 100 listings each, ~950 KB in, from 6 loops at once, each waiting out Retry-After when refused) while another
// client reads one of its orders with GET /v1/orders/{id}, one request after another; the reader's latency is
// measured idle and under that load, on one web process (SQLite, no worker: dry runs need none). Run once with
// the service's limits (RATE_LIMIT_PER_S 200, BATCH_CONCURRENCY_PER_CLIENT 2) and once without them (rate
// limit off, concurrency unbounded) for comparison. Writes the "Fairness" section of BENCHMARKS.md.
//   BENCH_RUNTIME=tsx node --import tsx scripts/bench/fairness.ts [--idle-s 10] [--load-s 25] [--loops 6]
//     [--write]
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { addCard, createClient } from '../../src/services/client-keys.js';
import { ADDRESS, type Buyer } from './buyer.js';
import { signedHeaders } from '../../test/helpers/signed-client.js';
import type { CatalogListing } from '../../src/store/port/store.port.js';
import { running, startEntry, stopAllOnInterrupt, stopProcess, waitForWeb, runBench } from './processes.js';
import { freshStore, serviceEnv, type BenchStore } from './stores.js';
import { printSection } from './benchmarks-file.js';
import { LOAD_VENDOR } from './load-mix.js';
import { ensureRedis, freePort, type RunningRedis } from '../redis.js';
import { benchArgs } from './bench-args.js';

const values = benchArgs({
  'idle-s': '10',
  'load-s': '25',
  loops: '6',
  write: false,
});
const IDLE_S = Number(values['idle-s']);
const LOAD_S = Number(values['load-s']);
const LOOPS = Number(values.loops);
const ENTRIES = 250;
const LISTINGS = 100;

const say = (line: string) => process.stderr.write(`[bench-fairness] ${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Client = Buyer;

const BENCH_LISTINGS: CatalogListing[] = Array.from({ length: LISTINGS }, (_, i) => ({
  listingId: 991_001 + i,
  vendorId: LOAD_VENDOR.vendorId,
  title: `Fairness title ${i + 1}`,
  isbn: `978000001${String(i).padStart(4, '0')}`,
  priceCents: 999 + i,
  quantity: 100_000_000,
}));

const orderOf = (client: Client, dryrun: boolean, listings: number) => ({
  shipAddr: ADDRESS,
  billAddr: ADDRESS,
  ccToken: client.ccToken,
  listings: BENCH_LISTINGS.slice(0, listings).map(({ listingId }) => ({ listingId, quantity: 1 })),
  shippingMode: 'S',
  domain: 'bookmarket.com',
  ...(dryrun ? { dryrun: true } : {}),
});

/** A signed request; resolves with its Svc-Status, Retry-After and body text (read whole, not parsed). */
async function send(baseUrl: string, client: Client, method: 'GET' | 'POST', path: string, body?: string) {
  const headers = signedHeaders(client, method, path, body, crypto.randomUUID());
  const res = await fetch(`${baseUrl}${path}`, { method, body, headers });
  const text = await res.text();
  return {
    status: res.headers.get('svc-status'),
    retryAfter: Number(res.headers.get('retry-after') ?? 0),
    text,
  };
}

async function prepare(): Promise<{ store: BenchStore; reader: Client; greedy: Client }> {
  const store = await freshStore('sqlite', 'bench_fairness');
  const opened = await store.open('bench');
  try {
    await opened.catalog.importCatalog([LOAD_VENDOR], BENCH_LISTINGS);
    const clientOf = async (name: string): Promise<Client> => {
      const client = await createClient(opened.clients, name, Date.now());
      const card = await addCard(opened.clients, client.clientId, false, Date.now());
      return { accessKey: client.accessKey, secretKey: client.secretKey, ccToken: card.token };
    };
    return { store, reader: await clientOf('reader'), greedy: await clientOf('greedy') };
  } finally {
    await opened.close();
  }
}

interface Latency {
  count: number;
  p50: number;
  p99: number;
  max: number;
}

/** The reader's GETs, one after another with a 10 ms pause, for `seconds`. */
async function readFor(baseUrl: string, reader: Client, orderId: number, seconds: number): Promise<Latency> {
  const ms: number[] = [];
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until) {
    const started = performance.now();
    const res = await send(baseUrl, reader, 'GET', `/v1/orders/${orderId}`);
    if (res.status !== '2000') throw new Error(`reader refused: ${res.status}`);
    ms.push(performance.now() - started);
    await sleep(10);
  }
  ms.sort((a, b) => a - b);
  const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]!;
  return { count: ms.length, p50: at(0.5), p99: at(0.99), max: ms.at(-1)! };
}

interface Run {
  limits: string;
  idle: Latency;
  loaded: Latency;
  batches: { answered: number; refused: number };
}

async function runOnce(redis: RunningRedis, limits: string, env: Record<string, string>): Promise<Run> {
  const { store, reader, greedy } = await prepare();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-fairness-'));
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const web = startEntry(
    'src/server.ts',
    serviceEnv(store, {
      REDIS_URL: redis.url,
      QUEUE_PREFIX: `benchfair${process.pid}${limits.length}`,
      LOG_LEVEL: 'warn',
      LOG_PRETTY: 'false',
      PORT: String(port),
      ...env,
    }),
    path.join(dir, 'web.log'),
  );
  try {
    await waitForWeb(baseUrl, web);
    const placed = await send(
      baseUrl,
      reader,
      'POST',
      '/v1/orders',
      JSON.stringify(orderOf(reader, false, 1)),
    );
    const orderId = (JSON.parse(placed.text) as { orderId: number }).orderId;
    // Warm-up of both paths.
    await readFor(baseUrl, reader, orderId, 2);
    const batch = JSON.stringify({
      orders: Array.from({ length: ENTRIES }, (_, i) => ({
        requestId: `e${i}`,
        ...orderOf(greedy, true, LISTINGS),
      })),
    });
    say(`${limits}: batch body ${(batch.length / 1024).toFixed(0)} KB`);
    const idle = await readFor(baseUrl, reader, orderId, IDLE_S);
    say(`${limits}: idle p99 ${idle.p99.toFixed(1)} ms`);
    const batches = { answered: 0, refused: 0 };
    let loading = true;
    const greedyLoops = Array.from({ length: LOOPS }, async () => {
      while (loading) {
        const res = await send(baseUrl, greedy, 'POST', '/v1/order-batches', batch);
        if (res.status === '2004') batches.answered++;
        else if (res.status === '4291') {
          batches.refused++;
          await sleep(Math.max(1, res.retryAfter) * 1000);
        } else throw new Error(`batch answered ${res.status}`);
      }
    });
    await sleep(1000);
    const loaded = await readFor(baseUrl, reader, orderId, LOAD_S);
    loading = false;
    await Promise.all(greedyLoops);
    say(`${limits}: loaded p99 ${loaded.p99.toFixed(1)} ms, batches ${JSON.stringify(batches)}`);
    return { limits, idle, loaded, batches };
  } finally {
    await stopProcess(web);
    await store.remove();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function report(runs: Run[], load: [number, number]): string {
  const f = (ms: number) => ms.toFixed(1);
  const rows = runs.map(
    ({ limits, idle, loaded, batches }) =>
      `| ${limits} | ${f(idle.p50)} / ${f(idle.p99)} / ${f(idle.max)} | ${f(loaded.p50)} / ${f(loaded.p99)} / ${f(loaded.max)} | ${(loaded.p99 / idle.p99).toFixed(1)}× | ${batches.answered} / ${batches.refused} |`,
  );
  return [
    `Command: \`BENCH_RUNTIME=tsx node --import tsx scripts/bench/fairness.ts --idle-s ${IDLE_S} --load-s ${LOAD_S} --loops ${LOOPS}\``,
    '',
    `One web process (tsx, SQLite, no worker) on a shared 2-core box (other sessions' work runs beside it; load`,
    `average ${load[0].toFixed(1)} at the start, ${load[1].toFixed(1)} at the end); the load generator runs on the same cores.`,
    `A greedy client sends batches of ${ENTRIES} dry-run orders of ${LISTINGS} listings each (the heaviest a batch may`,
    `be within 1 MiB) from ${LOOPS} loops at once, each waiting out \`Retry-After\` when refused; meanwhile another`,
    `client reads one of its orders with \`GET /v1/orders/{id}\`, one request after another with a 10 ms pause`,
    `(${IDLE_S} s idle, then ${LOAD_S} s under the load). Aim: the reader's p99 under load below 3× its idle p99.`,
    '',
    '| limits | reader idle p50 / p99 / max (ms) | reader under load p50 / p99 / max (ms) | p99 ratio | batches answered / refused 4291 |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

async function main() {
  const redis = await ensureRedis();
  stopAllOnInterrupt(() => redis.stop());
  const loadAtStart = os.loadavg()[0]!;
  try {
    const runs = [
      await runOnce(redis, 'service defaults (200/s, batch cost, 2 batches at once)', {}),
      await runOnce(redis, 'none (rate limit off, batches unbounded)', {
        RATE_LIMIT_PER_S: '0',
        BATCH_CONCURRENCY_PER_CLIENT: '1000',
      }),
    ];
    const body = report(runs, [loadAtStart, os.loadavg()[0]!]);
    printSection('Fairness', body, values.write);
  } finally {
    await Promise.all([...running].map(stopProcess));
    await redis.stop();
  }
}

runBench(main);
