// A receiver that hangs beside a healthy one: one client's webhook never answers and has a backlog of
// deliveries, while another client's orders record an event every 250 ms; one real worker process delivers
// both. Prints how long the healthy client's events took from being recorded to arriving, how many requests the
// hanging receiver got and held at once, for BENCHMARKS.md ("Webhook fairness"); --write replaces it there.
// Each round gives the healthy client's events `--seconds` (default 20); --before runs the same with every
// slot open to one endpoint and no breaker (what delivery did before it was fair), for comparison.
//   node --import tsx scripts/bench/webhook-fairness.ts [--backlog 200] [--seconds 20] [--before] [--write]
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { benchClient, importBenchListing } from './webhook-clients.js';
import { writeSection } from './benchmarks-file.js';
import { running, startEntry, stopProcess, waitFor, waitForWorkers } from './processes.js';
import { freshStore, serviceEnv, type BenchStore } from './stores.js';
import { ensureRedis, type RunningRedis } from '../redis.js';

const { values } = parseArgs({
  options: {
    backlog: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '20' },
    before: { type: 'boolean', default: false },
    write: { type: 'boolean', default: false },
  },
});
const BACKLOG = Number(values.backlog);
const SECONDS = Number(values.seconds);
const EVERY_MS = 250;

interface Receiver {
  url: string;
  /** Arrival time (epoch ms) of each request by its event id; the most requests open at once. */
  arrived: Map<string, number>;
  requests: number;
  maxOpen: number;
  close(): void;
}

async function startReceiver(hang: boolean): Promise<Receiver> {
  const state = { arrived: new Map<string, number>(), requests: 0, open: 0, maxOpen: 0 };
  const server = http.createServer((req, res) => {
    state.requests += 1;
    state.open += 1;
    state.maxOpen = Math.max(state.maxOpen, state.open);
    res.on('close', () => (state.open -= 1));
    const eventId = String(req.headers['svc-event-id']);
    if (!state.arrived.has(eventId)) state.arrived.set(eventId, Date.now());
    req.resume();
    if (!hang) req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    get arrived() {
      return state.arrived;
    },
    get requests() {
      return state.requests;
    },
    get maxOpen() {
      return state.maxOpen;
    },
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}

interface Result {
  mode: string;
  events: number;
  latenciesMs: number[];
  hangingRequests: number;
  hangingMaxOpen: number;
}

async function round(bench: BenchStore, redis: RunningRedis, before: boolean): Promise<Result> {
  const hanging = await startReceiver(true);
  const healthy = await startReceiver(false);
  const store = await bench.open();
  try {
    await importBenchListing(store);
    const slow = await benchClient(store, 'hanging receiver', hanging.url);
    const fair = await benchClient(store, 'healthy receiver', healthy.url);
    await slow.settle();
    for (let i = 1; i < BACKLOG; i += 1) await store.webhooks.replay(slow.webhook.webhookId, 0, Date.now());
    const logFile = path.join(os.tmpdir(), `bench-webhook-fairness-${process.pid}.log`);
    const unfair = { WEBHOOK_CONCURRENCY_PER_ENDPOINT: '32', WEBHOOK_BREAKER_FAILURES: '1000000' };
    const env = serviceEnv(bench, {
      REDIS_URL: redis.url,
      QUEUE_PREFIX: `benchfair${process.pid}${before ? 'b' : 'a'}`,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'info',
      LOG_PRETTY: 'false',
      ...(before ? unfair : {}),
    });
    const worker = startEntry('workers/order.worker.ts', env, logFile);
    await waitForWorkers(logFile, 1);
    await waitFor(() => hanging.requests >= 1, 'the hanging receiver reached');

    const recordedAt = new Map<number, number>();
    const stopAt = Date.now() + SECONDS * 1000;
    for (let i = 0; Date.now() < stopAt; i += 1) {
      recordedAt.set(i, Date.now());
      await fair.settle();
      await new Promise((resolve) => setTimeout(resolve, EVERY_MS));
    }
    const events = recordedAt.size;
    // Generous: before, each of the healthy client's events waits for hung attempts to time out.
    await waitFor(() => healthy.arrived.size >= events, 'the healthy events delivered', 600_000, 50);
    await stopProcess(worker);
    const recorded = [...recordedAt.values()].sort((a, b) => a - b);
    const arrived = [...healthy.arrived.values()].sort((a, b) => a - b);
    return {
      mode: before ? 'before: 32 slots for one endpoint, no breaker' : 'fair: defaults',
      events,
      // The n-th event recorded is matched to the n-th arrival: close enough for percentiles.
      latenciesMs: recorded.map((at, i) => arrived[i]! - at).sort((a, b) => a - b),
      hangingRequests: hanging.requests,
      hangingMaxOpen: hanging.maxOpen,
    };
  } finally {
    await store.close();
    hanging.close();
    healthy.close();
  }
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

function section(results: Result[]): string {
  const rows = results.map((r) => {
    const l = r.latenciesMs;
    return `| ${r.mode} | ${r.events} | ${pct(l, 0.5)} | ${pct(l, 0.95)} | ${l.at(-1)} | ${r.hangingRequests} | ${r.hangingMaxOpen} |`;
  });
  const flag = results.length > 1 ? ' --before' : '';
  return `Command: \`node --import tsx scripts/bench/webhook-fairness.ts --backlog ${BACKLOG} --seconds ${SECONDS}${flag}\` \
(${os.cpus().length} cores shared with other sessions, SQLite, one worker process, WEBHOOK_CONCURRENCY=32, \
WEBHOOK_TIMEOUT_MS=10000)

One client's receiver never answers and has ${BACKLOG} deliveries waiting; meanwhile another client's orders record an
event every ${EVERY_MS} ms for ${SECONDS} s. Latency: from the event recorded to its arrival at the healthy receiver (the
relay runs every second, so about half a second of it is the relay's wait). "Hanging" counts the requests the
hanging receiver got and the most it held open at once.

| delivery | healthy events | p50 ms | p95 ms | max ms | hanging: requests | hanging: open at once |
|---|--:|--:|--:|--:|--:|--:|
${rows.join('\n')}`;
}

async function main(): Promise<void> {
  const redis = await ensureRedis();
  const results: Result[] = [];
  try {
    for (const before of values.before ? [true, false] : [false]) {
      const bench = await freshStore('sqlite', 'benchfairness');
      try {
        results.push(await round(bench, redis, before));
      } finally {
        await bench.remove();
      }
    }
  } finally {
    await Promise.all([...running].map(stopProcess));
    await redis.stop();
  }
  const text = section(results);
  process.stdout.write(`${text}\n`);
  if (values.write) writeSection('Webhook fairness', text);
}

await main();
