// Orders accepted per second through POST /v1/order-batches (batches of 500) against single signed requests
// with Prefer: respond-async, at the same number of requests in flight, on one web process and no worker (the
// acceptance rate only: every order ends QUEUED in the store and waiting in the queue). Single and batch phases
// alternate for `--rounds` rounds on the same process and store. Writes the "Batches" section of BENCHMARKS.md.
//   node --import tsx scripts/bench/batches.ts [--single 3000] [--batched 50000] [--batch 500] [--in-flight 8]
//     [--rounds 2] [--stores sqlite,postgres] [--write]
import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { loadConfig } from '../../src/config/config.js';
import { ORDER_QUEUE } from '../../src/queue/order.queue.js';
import { batchesSection, type BatchRun } from './batches-report.js';
import { startEntry, stopProcess, waitForWeb, runBench } from './processes.js';
import {
  parseStoreKinds,
  postgresServerPid,
  orderServiceEnv,
  type StoreKind,
  stopServersOnInterrupt,
  stopServers,
} from './stores.js';
import { printSection } from './benchmarks-file.js';
import { loadOrder, postAsyncOrder, postSigned, prepareBuyer, timed, type Buyer } from './buyer.js';
import { treeCpuSeconds } from '../../test/helpers/process-stats.js';
import { ensureRedis, freePort, type RunningRedis } from '../redis.js';
import { benchArgs } from './bench-args.js';

const values = benchArgs({
  single: '3000',
  batched: '50000',
  batch: '500',
  'in-flight': '8',
  rounds: '2',
  stores: 'sqlite,postgres',
  write: false,
});
const SINGLE = Number(values.single);
const BATCHED = Number(values.batched);
const BATCH = Number(values.batch);
const IN_FLIGHT = Number(values['in-flight']);
const ROUNDS = Number(values.rounds);
const STORES = parseStoreKinds(values.stores);

const say = (line: string) => process.stderr.write(`[bench-batches] ${line}\n`);

async function postBatch(baseUrl: string, buyer: Buyer, size: number): Promise<void> {
  const orders = Array.from({ length: size }, () => ({
    requestId: crypto.randomUUID(),
    ...loadOrder(buyer),
  }));
  const res = await postSigned(baseUrl, buyer, '/v1/order-batches', JSON.stringify({ orders }));
  const results = (res.body as { results?: { status: number[] }[] }).results ?? [];
  const created = results.filter((r) => r.status.length === 1 && r.status[0] === 2010).length;
  if (res.status !== '2004' || created !== size)
    throw new Error(`batch refused: ${res.status}, ${created} of ${size} created`);
}

/** One web process on a fresh store: single and batch phases alternating, `ROUNDS` times. */
async function runStore(redis: RunningRedis, kind: StoreKind): Promise<BatchRun[]> {
  const { store, buyer } = await prepareBuyer(kind, 'bench_batches');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-batches-'));
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = orderServiceEnv(
    store,
    { redisUrl: redis.url, prefix: `benchbatch${process.pid}${kind}`, port },
    {
      // No worker settles anything here: the limit must not refuse the benchmark's own orders.
      MAX_UNSETTLED_ORDERS: String(10 * (SINGLE + BATCHED) * ROUNDS),
      // One client sends every order: its share of the backlog is the whole of it.
      MAX_UNSETTLED_PER_CLIENT: String(10 * (SINGLE + BATCHED) * ROUNDS),
    },
  );
  const web = startEntry('src/server.ts', env, path.join(dir, 'web.log'));
  const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
  const queue = new Queue(ORDER_QUEUE, { connection, prefix: loadConfig(env).REDIS_PREFIX });
  const probe = store.probe();
  const runs: BatchRun[] = [];
  try {
    await waitForWeb(baseUrl, web);
    // Warm-up: connections, statement caches, JIT.
    await timed(IN_FLIGHT * 10, IN_FLIGHT, () => postAsyncOrder(baseUrl, buyer));
    await timed(IN_FLIGHT, IN_FLIGHT, () => postBatch(baseUrl, buyer, BATCH));
    const readCpu = await cpuReader(web, redis, kind);
    for (let round = 1; round <= ROUNDS; round++) {
      runs.push(await measure(kind, 'single', SINGLE, 1, () => postAsyncOrder(baseUrl, buyer), readCpu));
      runs.push(
        await measure(kind, 'batch', BATCHED, BATCH, () => postBatch(baseUrl, buyer, BATCH), readCpu),
      );
    }
    const stored = await probe.scalar<number>('SELECT count(*) FROM orders');
    const expected = IN_FLIGHT * 10 + IN_FLIGHT * BATCH + runs.reduce((sum, r) => sum + r.orders, 0);
    if (Number(stored) !== expected) throw new Error(`${stored} orders stored, ${expected} expected`);
    return runs;
  } finally {
    await stopProcess(web);
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    connection.disconnect();
    await probe.close();
    await store.remove();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

type CpuReader = () => Record<string, number>;

/** CPU seconds so far of the web process, this load generator, Redis and the PostgreSQL server (when private). */
async function cpuReader(web: ChildProcess, redis: RunningRedis, kind: StoreKind): Promise<CpuReader> {
  const databasePid = kind === 'postgres' ? await postgresServerPid() : undefined;
  return () => {
    const cpu: Record<string, number> = { web: treeCpuSeconds(web.pid!), generator: ownCpuSeconds() };
    if (redis.process?.pid) cpu.redis = treeCpuSeconds(redis.process.pid);
    if (databasePid) cpu.database = treeCpuSeconds(databasePid);
    return cpu;
  };
}

/** One phase: `orders` sent `per` request, IN_FLIGHT requests at once, timed and with the CPU each process spent. */
async function measure(
  kind: StoreKind,
  mode: BatchRun['mode'],
  orders: number,
  per: number,
  send: () => Promise<void>,
  readCpu: CpuReader,
): Promise<BatchRun> {
  const requests = Math.ceil(orders / per);
  const before = readCpu();
  const seconds = await timed(requests, IN_FLIGHT, send);
  const after = readCpu();
  const cpu = Object.fromEntries(Object.entries(after).map(([name, s]) => [name, s - (before[name] ?? 0)]));
  say(`${kind} ${mode}: ${((requests * per) / seconds).toFixed(0)} orders/s`);
  return { store: kind, mode, orders: requests * per, seconds, cpu };
}

function ownCpuSeconds(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

async function main() {
  const redis = await ensureRedis();
  stopServersOnInterrupt(redis);
  const loadAtStart = os.loadavg()[0]!;
  try {
    const runs: BatchRun[] = [];
    for (const kind of STORES) runs.push(...(await runStore(redis, kind)));
    const body = batchesSection(
      {
        single: SINGLE,
        batched: BATCHED,
        batch: BATCH,
        inFlight: IN_FLIGHT,
        rounds: ROUNDS,
        load: [loadAtStart, os.loadavg()[0]!],
      },
      runs,
    );
    printSection('Batches', body, values.write);
  } finally {
    await stopServers(redis);
  }
}

runBench(main);
