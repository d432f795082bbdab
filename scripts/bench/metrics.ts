// What a scrape of /metrics costs on a large store, and what scrapes cost everyone else:
//   npx tsx scripts/bench/metrics.ts [--store sqlite|postgres] [--orders 1000000] [--seconds 20] [--write]
// A fresh store filled by generate-orders.ts (--orders orders; PostgreSQL: a database on DATABASE_URL's server or
// a private one), a private Redis, and the Procfile's web and clock as production runs them (the clock publishes
// the store counts every STORE_COUNTS_EVERY_S = 5 s). Measured from outside, over HTTP:
//   - one scrape at a time, each a full collection: 60 scrapes, each beside a /healthz half-way between two (the
//     floor: the same round trip on the same idle process); fetch keeps its connection alive between them, as
//     Prometheus does; and the same again with a new connection for each request (node:http, no agent), as a
//     scraper that does not keep connections alive. Their gaps alternate 1.2 and 2.2 s, so that the listener
//     cannot collect ahead of them (a text collected ahead would be more than METRICS_REUSE_MS old, or not yet);
//   - 60 scrapes at a steady 1.5 s, as Prometheus scrapes a target: each answered with a text collected 250 ms
//     before it was due, again beside a /healthz half-way between two;
//   - /healthz alone: one request every 5 ms for --seconds / 2;
//   - /healthz while 5 clients scrape in a loop, for --seconds: its p50/p99/max, and the scrapes' own times.
// Beside them, the clock's count (the scan a scrape no longer makes), timed in this process on the same store.
// --write puts the table into the "## Metrics (SQLite)" or "## Metrics (PostgreSQL)" section of BENCHMARKS.md.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { printSection } from './benchmarks-file.js';
import { percentile, sampleCells, sleep } from './samples.js';
import { running, startEntry, stopAllOnInterrupt, waitFor, waitForWeb, runBench } from './processes.js';
import { freshStore, parseStoreKinds, serviceEnv, stopServers } from './stores.js';
import { BENCH_STORE_SHAPE, generateOrders } from './generate-orders.js';
import { freePort, startPrivateRedis } from '../redis.js';
import { benchArgs } from './bench-args.js';

const values = benchArgs({
  store: 'sqlite',
  orders: '1000000',
  seconds: '20',
  write: false,
});
const KIND = parseStoreKinds(values.store)[0]!;
const ORDERS = Number(values.orders);
const SECONDS = Number(values.seconds);
const SCRAPERS = 5;
/** Full collections one at a time (a p99 of 60 is their second largest). */
const ALONE = 60;
/** Gaps between scrapes that the listener cannot foresee: each scrape collects its own text. */
const UNFORESEEN_GAPS_MS = [1200, 2200];
/** Prometheus's cadence, shortened: scrapes this far apart are answered with a text collected ahead. */
const STEADY_GAP_MS = 1500;

const say = (line: string) => process.stderr.write(`[bench-metrics] ${line}\n`);

const ms = (value: number) => value.toFixed(2);

/** The web's own time for a scrape, from its `Server-Timing: collect;dur=…` header, into `into`. */
function serverTime(header: string | null | undefined, into?: number[]): void {
  const dur = /collect;dur=([\d.]+)/.exec(header ?? '')?.[1];
  if (into && dur !== undefined) into.push(Number(dur));
}

/** One GET, read to its end: milliseconds from sending to the last byte (`server`: the web's own times). */
async function timed(url: string, server?: number[]): Promise<number> {
  const began = performance.now();
  const res = await fetch(url);
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  serverTime(res.headers.get('server-timing'), server);
  return performance.now() - began;
}

/** One GET on a new connection (closed after it), read to its end: milliseconds from connecting to the last byte. */
function timedNewConnection(url: string, server?: number[]): Promise<number> {
  const began = performance.now();
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        const header = res.headers['server-timing'];
        serverTime(Array.isArray(header) ? header[0] : header, server);
        res.on('data', () => undefined);
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(performance.now() - began)
            : reject(new Error(`${url}: ${res.statusCode}`)),
        );
      })
      .on('error', reject);
  });
}

/** /healthz every 5 ms (each waits for the one before) until `until`. */
async function sampleHealth(url: string, until: number): Promise<number[]> {
  const samples: number[] = [];
  while (Date.now() < until) {
    samples.push(await timed(url));
    await sleep(5);
  }
  return samples;
}

async function main(): Promise<void> {
  stopAllOnInterrupt();
  const store = await freshStore(KIND, 'bench_metrics');
  say(`filling a ${KIND} store with ${ORDERS} orders`);
  const generated = await generateOrders(store, { orders: ORDERS, ...BENCH_STORE_SHAPE });
  say(`${generated.orders} orders, ${generated.items} items in ${generated.seconds} s`);

  // The scan the clock makes every STORE_COUNTS_EVERY_S, once per deployment; a scrape used to make it.
  const opened = await store.open('bench');
  await opened.counts();
  const countMs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const began = performance.now();
    await opened.counts();
    countMs.push(performance.now() - began);
  }
  await opened.close();

  const redis = await startPrivateRedis();
  running.add(redis.process!);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-bench-metrics-'));
  const [port, metricsPort] = [await freePort(), await freePort()];
  const env = serviceEnv(store, {
    REDIS_URL: redis.url,
    QUEUE_PREFIX: `metrics${crypto.randomBytes(4).toString('hex')}`,
    PORT: String(port),
    METRICS_PORT: String(metricsPort),
    LOG_LEVEL: 'warn',
    LOG_PRETTY: 'false',
    STORE_COUNTS_EVERY_S: '5',
  });
  const logFile = path.join(dir, 'service.log');
  const web = startEntry('src/server.ts', env, logFile);
  // The clock publishes the store's counts the metrics read; stopped with the web at the end.
  startEntry('jobs/clock.ts', env, logFile);
  const base = `http://127.0.0.1:${port}`;
  const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  try {
    await waitForWeb(base, web);
    await waitFor(
      async () => (await (await fetch(metricsUrl)).text()).includes('bookorders_order_items{'),
      'the clock publishing the store counts',
    );
    const text = await (await fetch(metricsUrl)).text();
    const items = [...text.matchAll(/^bookorders_order_items\{[^}]*\} (\d+)$/gm)].reduce(
      (sum, m) => sum + Number(m[1]),
      0,
    );
    say(`counts published: ${items} items; ${text.length} bytes a scrape`);

    for (let i = 0; i < 3; i++) await timed(metricsUrl);
    // Each full collection paired with a /healthz half-way between two of them: the same HTTP round trip on
    // the same idle, cold process, doing nothing, so that what the machine's load adds shows beside the scrape.
    const alone: number[] = [];
    const pairedHealth: number[] = [];
    const aloneNew: number[] = [];
    const pairedHealthNew: number[] = [];
    const serverMs: number[] = [];
    const [shortGap, longGap] = UNFORESEEN_GAPS_MS as [number, number];
    for (let i = 0; i < ALONE; i++) {
      await sleep(shortGap / 2);
      pairedHealth.push(await timed(`${base}/healthz`));
      await sleep(shortGap / 2);
      alone.push(await timed(metricsUrl, serverMs));
      await sleep(longGap / 2);
      pairedHealthNew.push(await timedNewConnection(`${base}/healthz`));
      await sleep(longGap / 2);
      aloneNew.push(await timedNewConnection(metricsUrl, serverMs));
    }
    const steady: number[] = [];
    const steadyHealth: number[] = [];
    const steadyServerMs: number[] = [];
    for (let i = 0; i < ALONE + 2; i++) {
      await sleep(STEADY_GAP_MS / 2);
      const health = await timed(`${base}/healthz`);
      await sleep(STEADY_GAP_MS / 2);
      const scrapeServer: number[] = [];
      const scrape = await timed(metricsUrl, scrapeServer);
      // The first two set the cadence (the first after the long gap above collects its own text).
      if (i < 2) continue;
      steadyHealth.push(health);
      steady.push(scrape);
      steadyServerMs.push(...scrapeServer);
    }
    say(`one scrape at a time: p50 ${ms(percentile(alone, 50))} ms, p99 ${ms(percentile(alone, 99))} ms`);
    say(
      `one scrape at a time, a new connection each: p50 ${ms(percentile(aloneNew, 50))} ms, ` +
        `p99 ${ms(percentile(aloneNew, 99))} ms`,
    );
    say(`the web's own time: p50 ${ms(percentile(serverMs, 50))} ms, p99 ${ms(percentile(serverMs, 99))} ms`);
    say(
      `a steady ${STEADY_GAP_MS} ms apart: p50 ${ms(percentile(steady, 50))} ms, p99 ${ms(percentile(steady, 99))} ms; ` +
        `the web's own time p99 ${ms(percentile(steadyServerMs, 99))} ms`,
    );

    const idle = await sampleHealth(`${base}/healthz`, Date.now() + (SECONDS * 1000) / 2);
    say(`/healthz alone: p99 ${ms(percentile(idle, 99))} ms`);

    const until = Date.now() + SECONDS * 1000;
    const underLoad: number[] = [];
    const scrapers = Array.from({ length: SCRAPERS }, async () => {
      while (Date.now() < until) underLoad.push(await timed(metricsUrl));
    });
    const [busy] = await Promise.all([sampleHealth(`${base}/healthz`, until), ...scrapers]);
    say(
      `/healthz while ${SCRAPERS} clients scrape: p99 ${ms(percentile(busy, 99))} ms; ` +
        `${underLoad.length} scrapes, p99 ${ms(percentile(underLoad, 99))} ms`,
    );

    const cpus = os.cpus();
    const section = [
      `Command: \`${KIND === 'postgres' && process.env.BENCH_POSTGRES_DURABLE === 'true' ? 'BENCH_POSTGRES_DURABLE=true ' : ''}npx tsx scripts/bench/metrics.ts --store ${KIND} --orders ${ORDERS} --seconds ${SECONDS} --write\``,
      '',
      `Store: ${generated.orders.toLocaleString('en')} orders, ${generated.items.toLocaleString('en')} items ` +
        `(generate-orders.ts, seed 1). Machine: ${cpus[0]?.model.trim()} (${cpus.length} cores), Node ${process.version}. ` +
        "The Procfile's web and clock on the compiled build, a private Redis; every time measured by an HTTP " +
        `client on the same machine, from sending to the last byte. A scrape is ${text.length.toLocaleString('en')} bytes.`,
      '',
      '| measured | p50 ms | p99 ms | max ms | samples |',
      '|---|--:|--:|--:|--:|',
      `| one scrape of \`/metrics\` at a time, 1.2 or 2.2 s apart (unforeseen: each a full collection; fetch, its connection kept alive) | ${sampleCells(alone)} |`,
      `| \`/healthz\` half-way between two of those scrapes (the same round trip, no work: the floor) | ${sampleCells(pairedHealth)} |`,
      `| the same scrape on a new connection each (node:http without keep-alive; taking turns with the row above) | ${sampleCells(aloneNew)} |`,
      `| \`/healthz\` on a new connection, half-way between two of those (the floor of that row) | ${sampleCells(pairedHealthNew)} |`,
      `| the web's own time for each of those ${serverMs.length} full collections, request to text (its \`Server-Timing\` header) | ${sampleCells(serverMs)} |`,
      `| one scrape at a time, a steady ${STEADY_GAP_MS / 1000} s apart as Prometheus scrapes (fetch, kept alive; each answered with the text collected 250 ms before it was due) | ${sampleCells(steady)} |`,
      `| \`/healthz\` half-way between two of those (the floor of that row) | ${sampleCells(steadyHealth)} |`,
      `| the web's own time for each of those steady scrapes (\`Server-Timing\`) | ${sampleCells(steadyServerMs)} |`,
      `| \`/healthz\`, nothing else running | ${sampleCells(idle)} |`,
      `| \`/healthz\` while ${SCRAPERS} clients scrape in a loop (${SECONDS} s) | ${sampleCells(busy)} |`,
      `| a scrape, while ${SCRAPERS} clients scrape in a loop (one collection per second, \`METRICS_REUSE_MS\`) | ${sampleCells(underLoad)} |`,
      `| the clock's count of items by status and unsettled orders (\`store.counts()\`, once per 5 s per deployment; off the web) | ${sampleCells(countMs)} |`,
      '',
      'No scrape reads the store: the clock counts it (last row) at most once every `STORE_COUNTS_EVERY_S` for the ' +
        "whole deployment and publishes the counts in Redis; a scrape reads them, the shared series, the queue's " +
        'counts and the heartbeats in one pipeline (one round trip), so its cost does not ' +
        'grow with the store; and a text collected less than `METRICS_REUSE_MS` (1000) ago is served again, so ' +
        'scrapers in a loop cost the web one collection per second however many they are. A target scraped at a ' +
        'steady interval has its text collected 250 ms before each scrape is due. Aim: a scrape at most 10 ms, `/healthz` p99 at most 25 ms while 5 clients scrape.',
    ].join('\n');
    printSection(`Metrics (${KIND === 'sqlite' ? 'SQLite' : 'PostgreSQL'})`, section, values.write);
  } finally {
    await stopServers(redis, store);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

runBench(main, { exitWhenDone: true });
