// A receiver that hangs beside a healthy one: one client's webhook never answers and has a backlog of
// deliveries, while another client's orders record an event every 250 ms; one real worker process delivers
// both. Prints how long the healthy client's events took from being recorded to arriving, how many requests the
// hanging receiver got and held at once, for BENCHMARKS.md ("Webhook fairness"); --write replaces it there.
// Each round gives the healthy client's events `--seconds` (default 20); --before runs the same with every
// slot open to one endpoint and no breaker (what delivery did before it was fair), for comparison.
// --receivers 8 --answer-ms 6000: that client has 8 receivers that answer 200 after 6 s instead of one that hangs,
// each with the backlog; --before then runs it with no share per client and no slow answer counted (what delivery
// did before), and --write replaces "Slow webhook receivers".
//   node --import tsx scripts/bench/webhook-fairness.ts [--backlog 200] [--seconds 20] [--before] [--write]
//     [--receivers 8 --answer-ms 6000]
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { benchClient, importBenchListing } from './webhook-clients.js';
import { printSection } from './benchmarks-file.js';
import { running, startEntry, stopProcess, waitFor, waitForWorkers } from './processes.js';
import { freshStore, serviceEnv, type BenchStore } from './stores.js';
import { ensureRedis, type RunningRedis } from '../redis.js';
import { benchArgs } from './bench-args.js';

const values = benchArgs({
  backlog: '200',
  seconds: '20',
  before: false,
  write: false,
  receivers: '1',
  'answer-ms': undefined,
});
const RECEIVERS = Number(values.receivers);
/** How late the slow client's receivers answer 200; absent, they never answer. */
const ANSWER_MS = values['answer-ms'] === undefined ? undefined : Number(values['answer-ms']);
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

/** A receiver that answers 204 at once (0), 200 after `answerMs`, or never (undefined). */
async function startReceiver(answerMs: number | undefined): Promise<Receiver> {
  const state = { arrived: new Map<string, number>(), requests: 0, open: 0, maxOpen: 0 };
  const server = http.createServer((req, res) => {
    state.requests += 1;
    state.open += 1;
    state.maxOpen = Math.max(state.maxOpen, state.open);
    res.on('close', () => (state.open -= 1));
    const eventId = String(req.headers['svc-event-id']);
    if (!state.arrived.has(eventId)) state.arrived.set(eventId, Date.now());
    req.resume();
    if (answerMs === 0) req.on('end', () => res.writeHead(204).end());
    else if (answerMs !== undefined)
      req.on('end', () => setTimeout(() => res.writeHead(200).end(), answerMs));
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
  const hangingAll = await Promise.all(Array.from({ length: RECEIVERS }, () => startReceiver(ANSWER_MS)));
  const healthy = await startReceiver(0);
  const store = await bench.open();
  try {
    await importBenchListing(store);
    const slow = await benchClient(store, 'hanging receiver', hangingAll[0]!.url);
    const clientId = slow.webhook.clientId;
    const webhooks = [slow.webhook];
    for (const more of hangingAll.slice(1))
      webhooks.push(await store.webhooks.add({ clientId, url: more.url, now: Date.now() }));
    const fair = await benchClient(store, 'healthy receiver', healthy.url);
    await slow.settle();
    for (const webhook of webhooks)
      for (let i = 1; i < BACKLOG; i += 1) await store.webhooks.replay(webhook.webhookId, 0, Date.now());
    const logFile = path.join(os.tmpdir(), `bench-webhook-fairness-${process.pid}.log`);
    const unfair: Record<string, string> =
      ANSWER_MS === undefined
        ? { WEBHOOK_CONCURRENCY_PER_ENDPOINT: '32', WEBHOOK_BREAKER_FAILURES: '1000000' }
        : { WEBHOOK_CONCURRENCY_PER_CLIENT: '1000000', WEBHOOK_SLOW_MS: '10000' };
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
    const hanging = {
      get requests() {
        return hangingAll.reduce((n, r) => n + r.requests, 0);
      },
    };
    await waitFor(() => hanging.requests >= RECEIVERS, 'the slow receivers reached');

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
      mode: before ? beforeMode() : 'fair: defaults',
      events,
      // The n-th event recorded is matched to the n-th arrival: close enough for percentiles.
      latenciesMs: recorded.map((at, i) => arrived[i]! - at).sort((a, b) => a - b),
      hangingRequests: hanging.requests,
      // The most each receiver held at once, summed: an upper bound of the client's slots held at once.
      hangingMaxOpen: hangingAll.reduce((n, r) => n + r.maxOpen, 0),
    };
  } finally {
    await store.close();
    for (const r of hangingAll) r.close();
    healthy.close();
  }
}

const beforeMode = () =>
  ANSWER_MS === undefined
    ? 'before: 32 slots for one endpoint, no breaker'
    : 'before: no share per client, slow answers not counted';

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

function section(results: Result[]): string {
  const rows = results.map((r) => {
    const l = r.latenciesMs;
    return `| ${r.mode} | ${r.events} | ${pct(l, 0.5)} | ${pct(l, 0.95)} | ${l.at(-1)} | ${r.hangingRequests} | ${r.hangingMaxOpen} |`;
  });
  const slowFlags = ANSWER_MS === undefined ? '' : ` --receivers ${RECEIVERS} --answer-ms ${ANSWER_MS}`;
  const flag = `${slowFlags}${results.length > 1 ? ' --before' : ''}`;
  const attack =
    ANSWER_MS === undefined
      ? `One client's receiver never answers and has ${BACKLOG} deliveries waiting`
      : `One client's ${RECEIVERS} receivers answer 200 after ${ANSWER_MS} ms and have ${BACKLOG} deliveries waiting each`;
  return `Command: \`node --import tsx scripts/bench/webhook-fairness.ts --backlog ${BACKLOG} --seconds ${SECONDS}${flag}\` \
(${os.cpus().length} cores shared with other sessions, SQLite, one worker process, WEBHOOK_CONCURRENCY=32, \
WEBHOOK_TIMEOUT_MS=10000)

${attack}; meanwhile another client's orders record an
event every ${EVERY_MS} ms for ${SECONDS} s. Latency: from the event recorded to its arrival at the healthy receiver (the
relay runs every second, so about half a second of it is the relay's wait). "Hanging" counts the requests the
slow client's receivers got and the most each held open at once, summed.

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
  const title = ANSWER_MS === undefined ? 'Webhook fairness' : 'Slow webhook receivers';
  printSection(title, text, values.write);
}

await main();
