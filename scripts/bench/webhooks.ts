// Webhook deliveries per second to a local receiver: a backlog of signed deliveries in the store's outbox
// (events of settled orders, multiplied by replays), drained by one real worker process (relay, BullMQ queue,
// signing, POST, attempt recorded) into an HTTP receiver in this process that answers 204. Prints a section
// for BENCHMARKS.md ("Webhook deliveries"); --write replaces it there.
//   node --import tsx scripts/bench/webhooks.ts [--deliveries 5000] [--stores sqlite,postgres] [--write]
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Store } from '../../src/store/port/store.port.js';
import { benchClient, importBenchListing } from './webhook-clients.js';
import { printSection } from './benchmarks-file.js';
import { startEntry, stopProcess, waitFor, waitForWorkers } from './processes.js';
import {
  freshStore,
  parseStoreKinds,
  postgresServerPid,
  serviceEnv,
  type BenchStore,
  stopServers,
} from './stores.js';
import { machineBusySeconds, processStats, treeCpuSeconds } from '../../test/helpers/process-stats.js';
import { ensureRedis, type RunningRedis } from '../redis.js';
import { benchArgs } from './bench-args.js';

const values = benchArgs({
  deliveries: '5000',
  stores: 'sqlite,postgres',
  concurrency: '32',
  'per-endpoint': '4',
  write: false,
});
const DELIVERIES = Number(values.deliveries);
const CONCURRENCY = Number(values.concurrency);
const PER_ENDPOINT = Number(values['per-endpoint']);
// Distinct events; the rest of the backlog is replays of them, which take the same path.
const EVENTS = Math.min(200, DELIVERIES);

interface Result {
  store: string;
  deliveries: number;
  seconds: number;
  /** CPU seconds while the backlog drained, by who spent them. */
  cpu: { worker: number; redis: number; database: number; receiver: number };
  /** Cores the whole machine kept busy meanwhile: worker, Redis, database server, this receiver, anything else. */
  machineCores: number;
}

/** A receiver that answers 204 and counts; `at` holds the first and last arrival times. */
async function startReceiver() {
  const at = { first: 0, last: 0, count: 0 };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      at.count += 1;
      at.last = performance.now();
      if (at.count === 1) at.first = at.last;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { at, url: `http://127.0.0.1:${port}/hooks`, close: () => server.close() };
}

/** One client with a webhook, and DELIVERIES pending deliveries to it: EVENTS settled orders, then replays. */
async function fillOutbox(store: Store, url: string): Promise<void> {
  const now = Date.now();
  await importBenchListing(store);
  const { webhook, settle } = await benchClient(store, 'webhook bench', url);
  for (let i = 0; i < EVENTS; i += 1) await settle();
  const replays = Math.ceil(DELIVERIES / EVENTS) - 1;
  for (let i = 0; i < replays; i += 1) await store.webhooks.replay(webhook.webhookId, 0, now);
}

/** CPU seconds so far of the worker, Redis (when private), the database server (when private) and this process. */
async function cpuNow(workerPid: number, redis: RunningRedis, bench: BenchStore) {
  const databasePid = bench.kind === 'postgres' ? await postgresServerPid() : undefined;
  const own = process.cpuUsage();
  return {
    worker: processStats(workerPid)?.cpuSeconds ?? 0,
    redis: redis.process?.pid ? (processStats(redis.process.pid)?.cpuSeconds ?? 0) : 0,
    database: databasePid ? treeCpuSeconds(databasePid) : 0,
    receiver: (own.user + own.system) / 1e6,
  };
}

async function round(bench: BenchStore, redis: RunningRedis): Promise<Result> {
  const receiver = await startReceiver();
  const store = await bench.open();
  try {
    await fillOutbox(store, receiver.url);
    const logFile = path.join(os.tmpdir(), `bench-webhooks-${process.pid}-${bench.kind}.log`);
    const env = serviceEnv(bench, {
      REDIS_URL: redis.url,
      QUEUE_PREFIX: `benchwh${process.pid}${bench.kind}`,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_CONCURRENCY: String(CONCURRENCY),
      WEBHOOK_CONCURRENCY_PER_ENDPOINT: String(PER_ENDPOINT),
      LOG_LEVEL: 'info',
      LOG_PRETTY: 'false',
    });
    const worker = startEntry('workers/order.worker.ts', env, logFile);
    await waitForWorkers(logFile, 1);
    await waitFor(() => receiver.at.count >= 1, 'first delivery');
    const before = await cpuNow(worker.pid!, redis, bench);
    const busyAtFirst = machineBusySeconds();
    await waitFor(() => receiver.at.count >= DELIVERIES, `${DELIVERIES} deliveries`, 600_000, 50);
    const after = await cpuNow(worker.pid!, redis, bench);
    const busy = machineBusySeconds() - busyAtFirst;
    await stopProcess(worker);
    fs.rmSync(logFile, { force: true });
    const seconds = (receiver.at.last - receiver.at.first) / 1000;
    return {
      store: bench.kind,
      deliveries: receiver.at.count,
      seconds,
      cpu: {
        worker: after.worker - before.worker,
        redis: after.redis - before.redis,
        database: after.database - before.database,
        receiver: after.receiver - before.receiver,
      },
      machineCores: busy / seconds,
    };
  } finally {
    await store.close();
    receiver.close();
  }
}

function section(results: Result[]): string {
  const rows = results.map((r) => {
    const rate = Math.round((r.deliveries - 1) / r.seconds);
    const us = (seconds: number) =>
      seconds > 0 ? String(Math.round((seconds / (r.deliveries - 1)) * 1e6)) : '–';
    const { worker, redis, database, receiver } = r.cpu;
    const cpu = [worker, redis, database, receiver].map(us).join(' | ');
    return `| ${r.store} | ${r.deliveries} | ${r.seconds.toFixed(2)} | ${rate} | ${cpu} | ${r.machineCores.toFixed(1)} |`;
  });
  return `Command: \`node --import tsx scripts/bench/webhooks.ts --deliveries ${DELIVERIES}\` (${os.cpus().length} cores, \
WEBHOOK_CONCURRENCY=${CONCURRENCY}, one worker process)

A backlog of pending deliveries in the store's outbox (${EVENTS} events of settled orders, the rest replays of
them) drained by one worker process into a local HTTP receiver answering 204: per delivery the relay hands it to
the \`webhooks\` queue, the job reads the delivery with its event and webhook, renders and signs the body, POSTs it
over a kept-alive connection after the SSRF check of the resolved address, and records the attempt. The rate is
measured at the receiver, from the first delivery to the last.

CPU µs per delivery by process (the database server counts PostgreSQL and its backends; SQLite runs inside the
worker); "machine cores busy" counts every process of this shared machine during the drain.

| store | deliveries | seconds | deliveries/s | worker µs | Redis µs | database server µs | receiver µs | machine cores busy |
|---|--:|--:|--:|--:|--:|--:|--:|--:|
${rows.join('\n')}`;
}

async function main(): Promise<void> {
  const redis = await ensureRedis();
  const results: Result[] = [];
  try {
    for (const kind of parseStoreKinds(values.stores)) {
      const bench = await freshStore(kind, 'benchwebhooks');
      try {
        results.push(await round(bench, redis));
      } finally {
        await bench.remove();
      }
    }
  } finally {
    await stopServers(redis);
  }
  const text = section(results);
  printSection('Webhook deliveries', text, values.write);
}

await main();
