// The client package's aims: its own cost per request (signing, headers, JSON in and out) beside a
// signed dry run's time through the real service, and `placeOrders` of N dry-run entries beside N `dryRun` calls
// made one after another. One web process (compiled, as the Procfile runs it) on a fresh SQLite store, no worker.
// Writes the "Client package" section of BENCHMARKS.md.
//   node --import tsx scripts/bench/client.ts [N=10000] [--write]
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { OrdersClient, type OrderRequest } from '../../client/src/index.js';
import { entryArgs, ROOT, runBench } from './processes.js';
import { freshStore, serviceEnv } from './stores.js';
import { printSection } from './benchmarks-file.js';
import { seedDemo, writeDemoOrders } from '../demo-data.js';
import { ensureRedis, freePort } from '../redis.js';

const args = parseArgs({
  options: { write: { type: 'boolean', default: false } },
  allowPositionals: true,
});
const N = Number(args.positionals[0] ?? 10_000);
const OWN_COST_ROUNDS = 20_000;

async function waitUp(child: ChildProcess, url: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`web exited ${child.exitCode}`);
    if (
      await fetch(url).then(
        () => true,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`web did not answer ${url}`);
}

/** The client's own work per request: a fetch that answers at once with a recorded dry-run answer. */
async function ownCostMs(
  accessKey: string,
  secretKey: string,
  order: OrderRequest,
  answer: string,
): Promise<number> {
  const headers = { 'content-type': 'application/json', 'svc-status': '2002' };
  const fetch = (async () =>
    new Response(answer, { status: 200, headers })) as unknown as typeof globalThis.fetch;
  const client = new OrdersClient({ baseUrl: 'http://127.0.0.1:1', accessKey, secretKey, fetch });
  for (let i = 0; i < 2_000; i++) await client.dryRun(order);
  const started = process.hrtime.bigint();
  for (let i = 0; i < OWN_COST_ROUNDS; i++) await client.dryRun(order);
  return Number(process.hrtime.bigint() - started) / 1e6 / OWN_COST_ROUNDS;
}

async function main(): Promise<void> {
  const redis = await ensureRedis();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-client-'));
  const store = await freshStore('sqlite', 'bench_client');
  const opened = await store.open('bench');
  const demo = await seedDemo(opened, path.join(dir, 'client.json'));
  await opened.close();
  const order = JSON.parse(
    fs.readFileSync(writeDemoOrders(dir, demo.ccToken, 1001).order, 'utf8'),
  ) as OrderRequest;
  const port = await freePort();
  const env = {
    REDIS_URL: redis.url,
    QUEUE_PREFIX: `benchclient${process.pid}`,
    RATE_LIMIT_PER_S: '0',
    PORT: String(port),
    LOG_LEVEL: 'warn',
  };
  const web = spawn(process.execPath, entryArgs('src/server.ts'), {
    cwd: ROOT,
    env: serviceEnv(store, env),
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    await waitUp(web, `${baseUrl}/healthz`);
    const client = new OrdersClient({ baseUrl, accessKey: demo.accessKey, secretKey: demo.secretKey });
    const answer = JSON.stringify(await client.dryRun(order));
    // Warm the service and the connection up.
    for (let i = 0; i < 500; i++) await client.dryRun(order);

    let started = Date.now();
    for (let i = 0; i < N; i++) await client.dryRun(order);
    const oneByOneMs = Date.now() - started;
    const entries = Array.from({ length: N }, (_, i) => ({
      requestId: `bench-${i}`,
      ...order,
      dryrun: true,
    }));
    started = Date.now();
    const results = await client.placeOrders(entries);
    const batchedMs = Date.now() - started;
    const priced = results.filter((r) => r.svcStatus[0] === 2002).length;
    if (priced !== N) throw new Error(`placeOrders priced ${priced} of ${N}`);
    const ownMs = await ownCostMs(demo.accessKey, demo.secretKey, order, answer);
    const dryRunMs = oneByOneMs / N;

    const section = [
      `Command: \`node --import tsx scripts/bench/client.ts ${N}\` (${os.cpus().length} cores, SQLite store, one web`,
      `process compiled (the Procfile command), no worker, the client in the bench's process)`,
      '',
      '| what | figure |',
      '| --- | --- |',
      `| a signed dry run through \`dryRun\`, one after another (${N}) | ${dryRunMs.toFixed(3)} ms each |`,
      `| the client's own cost per \`dryRun\` (signing, headers, JSON both ways; a fetch that answers at once, ${OWN_COST_ROUNDS} calls) | ${ownMs.toFixed(3)} ms, **${((100 * ownMs) / dryRunMs).toFixed(1)} %** of a dry run (aim: under 5 %) |`,
      `| ${N} \`dryRun\` calls one after another | ${(oneByOneMs / 1000).toFixed(1)} s |`,
      `| \`placeOrders\` of the same ${N} as dry-run entries (batches of 500, 2 in flight) | ${(batchedMs / 1000).toFixed(1)} s: **${(oneByOneMs / batchedMs).toFixed(1)}×** faster (aim: at least 10×) |`,
      '',
      "The client's own cost is measured with a `fetch` that answers at once with a recorded answer, so it also",
      'counts building that Response and reading it, which a real request has too.',
    ].join('\n');
    printSection('Client package (book-order-client)', section, args.values.write);
  } finally {
    await new Promise((resolve) =>
      web.exitCode !== null ? resolve(null) : web.once('exit', resolve).kill('SIGTERM'),
    );
    await redis.stop();
    await store.remove();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

runBench(main);
