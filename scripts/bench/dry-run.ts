// The hot paths through the whole signed front against a bare Express handler, each server in its own process
// on this machine, measured one after the other by autocannon from this process: a signed dry run (auth,
// validation, catalog reads, pricing) against a handler that only parses the same body, and a signed
// `GET /v1/orders/{id}` against a handler that answers a small JSON body. Writes the "Dry run and get" section
// of BENCHMARKS.md. The web runs as the Procfile runs it, compiled (BENCH_RUNTIME=tsx: from source, through tsx).
// The store: --store sqlite|postgres (a fresh file, or a fresh database on DATABASE_URL's server or a private
// one); without it the environment's (DATABASE_URL, else DB_PATH) when it names one, else a fresh SQLite file.
// --checkout DIR: before and after in one run: the web of DIR (another checkout of the project, e.g. a `git
// worktree` of the commit before, built there when stale) runs beside this tree's on the same store and Redis,
// and every round measures both, alternated; its figures belong in a commit message, not in BENCHMARKS.md.
//   node --import tsx scripts/bench/dry-run.ts [seconds] [--store sqlite|postgres] [--checkout DIR] [--write]
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { createSigningClient, signedHeaders } from '../../test/helpers/signed-client.js';
import {
  buildCheckout,
  entryArgs,
  profileArgs,
  ROOT,
  RUNTIME,
  runBench,
  startProcfileProcess,
  waitForWeb,
} from './processes.js';
import {
  freshStore,
  parseStoreKinds,
  serviceEnv,
  stopPostgresServer,
  storeFromEnvOrFresh,
} from './stores.js';
import { seedDemo, writeDemoOrders } from '../demo-data.js';
import { processStats } from '../../test/helpers/process-stats.js';
import { ensureRedis, freePort } from '../redis.js';
import { printSection } from './benchmarks-file.js';
import { hotPathSection, type HotPathRounds, type Round } from './dry-run-report.js';

const args = parseArgs({
  options: {
    write: { type: 'boolean', default: false },
    store: { type: 'string' },
    checkout: { type: 'string' },
  },
  allowPositionals: true,
});
if (args.values.write && args.values.checkout)
  throw new Error('--write takes this tree alone: drop --checkout');
const checkout = args.values.checkout ? path.resolve(args.values.checkout) : undefined;
const seconds = Number(args.positionals[0] ?? 5);
const CONNECTIONS = 32;
const ROUNDS = 3;

/** Starts a server entry in its own process and resolves once `readyUrl` answers. */
async function startProcess(
  entry: string,
  env: NodeJS.ProcessEnv,
  readyUrl: string,
  nodeArgs: string[] = [],
) {
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, ...entryArgs(entry)], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`${entry} exited ${child.exitCode}`);
    const up = await fetch(readyUrl, { method: 'POST' }).then(
      () => true,
      () => false,
    );
    if (up) return child;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${entry} did not answer ${readyUrl}`);
}

/** CPU seconds (user + system) a process has used so far, from /proc. */
function cpuSeconds(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface Target {
  pid: number;
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
}

async function measure(target: Target, duration = seconds, connections = CONNECTIONS): Promise<Round> {
  const cpuBefore = cpuSeconds(target.pid);
  const { url, method, headers, body } = target;
  const result = await autocannon({ url, method, headers, body, connections, duration });
  const cpu = cpuSeconds(target.pid) - cpuBefore;
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failures: result.non2xx + result.errors,
    cpuUsPerRequest: (cpu * 1e6) / Math.max(1, result.requests.total),
  };
}

async function main() {
  const redis = await ensureRedis();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-dry-'));
  const kind = args.values.store ? parseStoreKinds(args.values.store)[0]! : undefined;
  const store = await (kind ? freshStore(kind, 'bench_dry') : storeFromEnvOrFresh('bench-dry'));
  const opened = await store.open('bench');
  const demo = await seedDemo(opened, path.join(dir, 'client.json'));
  const storeName = opened.kind === 'sqlite' ? 'SQLite' : 'PostgreSQL';
  await opened.close();
  const bodies = writeDemoOrders(dir, demo.ccToken, 1001);
  const body = fs.readFileSync(bodies.dryRun, 'utf8');

  const [webPort, barePort] = [await freePort(), await freePort()];
  const env = {
    REDIS_URL: redis.url,
    QUEUE_PREFIX: `bench${process.pid}`,
    RATE_LIMIT_PER_S: '0',
    PORT: String(webPort),
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
  };
  const webBase = `http://127.0.0.1:${webPort}`;
  const bareBase = `http://127.0.0.1:${barePort}`;
  // BENCH_PROFILE=DIR writes CPU profiles of the service's web process and of the bare server in DIR/server and
  // DIR/bench-servers, to compare where each spends its time.
  const web = await startProcess(
    'src/server.ts',
    serviceEnv(store, env),
    `${webBase}/v1/orders`,
    profileArgs('src/server.ts'),
  );
  // The checkout's web: its Procfile's command, run from its tree (a release from before may name other files).
  const before = checkout
    ? await (async () => {
        await buildCheckout(checkout);
        const base = `http://127.0.0.1:${await freePort()}`;
        const child = startProcfileProcess(
          checkout,
          'web',
          serviceEnv(store, { ...env, PORT: new URL(base).port }),
          path.join(dir, 'before-web.log'),
        );
        await waitForWeb(base, child);
        return { child, base };
      })()
    : undefined;
  const bare = await startProcess(
    'scripts/bench/servers.ts',
    { ...process.env, PORT: String(barePort) },
    `${bareBase}/v1/orders`,
    profileArgs('scripts/bench/servers.ts'),
  );
  // One real order, accepted and left queued (no worker runs here), for the get.
  const { accessKey, secretKey } = demo;
  const client = createSigningClient({ baseUrl: webBase, accessKey, secretKey });
  const placed = await client.request<{ orderId: number }>(
    'POST',
    '/v1/orders',
    fs.readFileSync(bodies.order, 'utf8'),
    { headers: { prefer: 'respond-async' } },
  );
  if (!placed.ok) throw new Error(`the order for the get was refused: ${JSON.stringify(placed.body)}`);
  const getPath = `/v1/orders/${placed.body.orderId}`;
  // Each target's headers are signed once, fixed for the whole run (the same request, repeated).
  const targets = {
    dryRun: {
      pid: web.pid!,
      url: `${webBase}/v1/orders`,
      method: 'POST',
      body,
      headers: signedHeaders(demo, 'POST', '/v1/orders', body),
    },
    bareDryRun: {
      pid: bare.pid!,
      url: `${bareBase}/v1/orders`,
      method: 'POST',
      body,
      headers: signedHeaders(demo, 'POST', '/v1/orders', body),
    },
    get: {
      pid: web.pid!,
      url: `${webBase}${getPath}`,
      method: 'GET',
      headers: signedHeaders(demo, 'GET', getPath, undefined),
    },
    bareGet: {
      pid: bare.pid!,
      url: `${bareBase}${getPath}`,
      method: 'GET',
      headers: signedHeaders(demo, 'GET', getPath, undefined),
    },
  } satisfies Record<string, Target>;
  const beforeTargets: Partial<Record<'beforeDryRun' | 'beforeGet', Target>> = before
    ? {
        beforeDryRun: { ...targets.dryRun, pid: before.child.pid!, url: `${before.base}/v1/orders` },
        beforeGet: { ...targets.get, pid: before.child.pid!, url: `${before.base}${getPath}` },
      }
    : {};
  const all: Partial<Record<keyof HotPathRounds, Target>> = { ...targets, ...beforeTargets };
  // Warm every path up so that JIT and caches are comparable, then measure one at a time, alternating the
  // servers so that a burst of load from elsewhere on the machine hits both alike.
  for (const target of Object.values(all)) await measure(target, 2, 8);
  const rounds: HotPathRounds = { dryRun: [], bareDryRun: [], get: [], bareGet: [] };
  for (let round = 0; round < ROUNDS; round++)
    for (const [name, target] of Object.entries(all))
      (rounds[name as keyof HotPathRounds] ??= []).push(await measure(target));
  const webPeakRssMiB = Math.round((processStats(web.pid!)?.peakRssBytes ?? 0) / 2 ** 20);
  await Promise.all(
    [web, bare, ...(before ? [before.child] : [])].map(
      (child) => new Promise((resolve) => child.once('exit', resolve).kill('SIGTERM')),
    ),
  );
  await redis.stop();
  await store.remove();
  await stopPostgresServer();
  fs.rmSync(dir, { recursive: true, force: true });

  const section = hotPathSection(rounds, {
    webPeakRssMiB,
    command: `${RUNTIME === 'tsx' ? 'BENCH_RUNTIME=tsx ' : ''}node --import tsx scripts/bench/dry-run.ts ${seconds}${kind ? ` --store ${kind}` : ''}${checkout ? ` --checkout ${checkout}` : ''}`,
    setting: `${os.cpus().length} cores, ${storeName} store, web ${RUNTIME === 'tsx' ? 'from source through tsx' : 'compiled (the Procfile command)'}, ${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ${seconds} s per server and path, medians`,
  });
  const title = `Dry run and get${storeName === 'SQLite' ? '' : ' (PostgreSQL)'}`;
  printSection(title, section, args.values.write);
}

runBench(main);
