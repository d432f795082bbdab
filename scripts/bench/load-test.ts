// Load test of a running service on this machine: a mix of signed dry runs, real orders with
// `Prefer: respond-async`, gets and searches for a fixed time, plus one key sent over its rate limit on purpose.
// Reports throughput, latency percentiles and unexpected answers per kind, how fast the workers settled the
// orders, and the peak memory (VmHWM) and CPU time of each process given with --pid.
//
//   node --import tsx scripts/bench/load-test.ts --url http://127.0.0.1:3000 [--db ./data/orders.db] \
//     --duration 20 --connections 20 [--rate 200] --pid web=1234 --pid worker=1240 [--json out.json]
// The store is the service's: DATABASE_URL, else DB_PATH (or --db), as the service picks it.
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { createSigningClient } from '../../test/helpers/signed-client.js';
import { addCard, createClient } from '../../src/services/client-keys.js';
import type { ClientStore } from '../../src/store/port/store.port.js';
import type { Probe } from '../../test/helpers/store.probe.js';
import { storeFromEnv, type BenchStore } from './stores.js';
import {
  EXPECTED,
  LOAD_LISTINGS,
  LOAD_VENDOR,
  loadRequest,
  orderJson,
  type Kind,
  type LoadClient,
  type Tally,
} from './load-mix.js';
import { childPids, processStats, type ProcessStats } from '../../test/helpers/process-stats.js';

export interface LoadOptions {
  url: string;
  /** The store the service under load uses. */
  store: BenchStore;
  durationS: number;
  connections: number;
  /** Requests per second of the over-limit key; 0 leaves it out. */
  overLimitRate: number;
  seedOrdersPerClient: number;
  /**
   * Requests per second of the mix (an open loop, split by the kinds' shares); absent, every connection sends
   * its next request as soon as the last is answered (a closed loop, as fast as the service goes).
   */
  ratePerS?: number;
  processes: { name: string; pid: number }[];
}

export interface KindReport {
  kind: Kind;
  connections: number;
  requests: number;
  perSecond: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  statuses: Record<string, number>;
  unexpected: number;
  socketErrors: number;
}

export interface LoadReport {
  durationS: number;
  kinds: KindReport[];
  orders: {
    accepted: number;
    settledDuringLoad: number;
    backlogAtEnd: number;
    peakBacklog: number;
    drainS: number;
    settledPerS: number;
  };
  /** Peak RSS over the process's life; CPU seconds spent from the start of the load to the end of the drain. */
  processes: (ProcessStats & { name: string })[];
}

const MAX_DURATION_S = 300;
// Enough connections in flight for one key to reach its rate whatever the latency.
const OVER_LIMIT_CONNECTIONS = 10;
const SHARE: [Kind, number][] = [
  ['dry-run', 0.4],
  ['order-async', 0.2],
  ['get', 0.2],
  ['search', 0.2],
];

/** The service must be on this machine: load is never sent anywhere else. */
export function assertLoopback(url: string): void {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  if (!(host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host)))
    throw new Error(`--url must be a loopback address (127.x, localhost, [::1]), got ${host}`);
}

async function createClients(clients: ClientStore, count: number): Promise<LoadClient[]> {
  const created: LoadClient[] = [];
  for (let i = 0; i < count; i++) {
    const client = await createClient(clients, `load client ${i + 1}`, Date.now());
    const card = await addCard(clients, client.clientId, false, Date.now());
    created.push({
      accessKey: client.accessKey,
      secretKey: client.secretKey,
      ccToken: card.token,
      orderIds: [],
    });
  }
  return created;
}

const countOrders = (probe: Probe, settled: boolean): Promise<number> =>
  probe.scalar(`SELECT count(*) FROM orders WHERE phase ${settled ? '=' : '<>'} 'settled'`);

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 200));
  }
  return true;
}

/** Every client gets a few orders first, so that gets and searches find something of their own. */
async function seed(url: string, clients: LoadClient[], perClient: number, probe: Probe): Promise<void> {
  await Promise.all(
    clients.map(async (client) => {
      const signing = createSigningClient({ baseUrl: url, ...client });
      for (let i = 0; i < perClient; i++) {
        const res = await signing.request('POST', '/v1/orders', orderJson(client, false), {
          headers: { prefer: 'respond-async' },
        });
        if (res.status !== 200)
          throw new Error(`seeding an order: ${res.status} ${JSON.stringify(res.body)}`);
        client.orderIds.push((res.body as { orderId: number }).orderId);
      }
    }),
  );
  if (!(await until(async () => (await countOrders(probe, false)) === 0, 120_000)))
    throw new Error('seed orders not settled in 120 s');
}

function runKind(
  url: string,
  kind: Kind,
  connections: number,
  durationS: number,
  clients: () => LoadClient,
  overallRate?: number,
) {
  const tally: Tally = { statuses: new Map() };
  const run = autocannon({
    url,
    connections,
    duration: durationS,
    timeout: 30,
    ...(overallRate ? { overallRate } : {}),
    requests: [loadRequest(kind, clients, tally)],
  });
  return run.then((result): KindReport => {
    const statuses = Object.fromEntries([...tally.statuses].sort());
    const unexpected = [...tally.statuses]
      .filter(([key]) => !EXPECTED[kind].includes(key))
      .reduce((n, [, c]) => n + c, 0);
    return {
      kind,
      connections,
      requests: result.requests.total,
      perSecond: Math.round(result.requests.total / result.duration),
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      max: result.latency.max,
      statuses,
      unexpected,
      socketErrors: result.errors,
    };
  });
}

interface Watched {
  name: string;
  pid: number;
  /** Without its children (the load generator may be the parent of the service's processes). */
  alone?: boolean;
}

/** Each process and its children (the workers of a web cluster), as they are now. */
function snapshot(processes: Watched[]): (ProcessStats & { name: string })[] {
  return processes.flatMap(({ name, pid, alone }) => {
    const children = alone
      ? []
      : childPids(pid).map((child, i) => ({ name: `${name} #${i + 1}`, pid: child }));
    return [{ name, pid }, ...children].flatMap((p) => {
      const stats = processStats(p.pid);
      return stats ? [{ name: p.name, ...stats }] : [];
    });
  });
}

export async function runLoad(options: LoadOptions): Promise<LoadReport> {
  assertLoopback(options.url);
  const durationS = Math.min(Math.max(1, options.durationS), MAX_DURATION_S);
  const store = await options.store.open('load-test');
  const probe = options.store.probe();
  try {
    await store.catalog.importCatalog([LOAD_VENDOR], LOAD_LISTINGS);
    const shares = SHARE.map(
      ([kind, share]) => [kind, Math.max(1, Math.round(options.connections * share)), share] as const,
    );
    const total = shares.reduce((n, [, c]) => n + c, 0);
    const clients = await createClients(store.clients, total + 1);
    await seed(options.url, clients, options.seedOrdersPerClient, probe);
    const overLimitClient = clients[total]!;
    let next = 0;
    const take = () => clients[next++ % total]!;

    // The load generator is watched too: on a small machine it competes with the service for the cores.
    const watched: Watched[] = [
      ...options.processes,
      { name: 'load generator', pid: process.pid, alone: true },
    ];
    const cpuAtStart = new Map(snapshot(watched).map((p) => [p.pid, p.cpuSeconds]));
    const settledBefore = await countOrders(probe, true);
    let peakBacklog = 0;
    const sampler = setInterval(
      () =>
        void countOrders(probe, false).then(
          (n) => (peakBacklog = Math.max(peakBacklog, n)),
          () => undefined,
        ),
      1000,
    );
    const runs = shares.map(([kind, connections, share]) =>
      runKind(
        options.url,
        kind,
        connections,
        durationS,
        take,
        options.ratePerS ? options.ratePerS * share : undefined,
      ),
    );
    if (options.overLimitRate > 0)
      runs.push(
        runKind(
          options.url,
          'over-limit',
          OVER_LIMIT_CONNECTIONS,
          durationS,
          () => overLimitClient,
          options.overLimitRate,
        ),
      );
    const kinds = await Promise.all(runs);
    clearInterval(sampler);

    const settledAtEnd = await countOrders(probe, true);
    const backlogAtEnd = await countOrders(probe, false);
    const drainStarted = Date.now();
    await until(async () => (await countOrders(probe, false)) === 0, 300_000);
    const drainS = (Date.now() - drainStarted) / 1000;
    const accepted = (await countOrders(probe, true)) - settledBefore;
    const processes = snapshot(watched).map((p) => ({
      ...p,
      cpuSeconds: p.cpuSeconds - (cpuAtStart.get(p.pid) ?? 0),
    }));
    return {
      durationS,
      kinds,
      orders: {
        accepted,
        settledDuringLoad: settledAtEnd - settledBefore,
        backlogAtEnd,
        peakBacklog: Math.max(peakBacklog, backlogAtEnd),
        drainS,
        settledPerS: Math.round(accepted / (durationS + drainS)),
      },
      processes,
    };
  } finally {
    await probe.close();
    await store.close();
  }
}

/** Bytes as whole MiB, as the reports print memory. */
export const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);

export function formatReport(report: LoadReport): string {
  const lines = [
    '| kind | conns | requests | req/s | p50 ms | p90 ms | p99 ms | max ms | answers | unexpected |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...report.kinds.map(
      (k) =>
        `| ${k.kind} | ${k.connections} | ${k.requests} | ${k.perSecond} | ${k.p50} | ${k.p90} | ${k.p99} | ${k.max} | ` +
        `${Object.entries(k.statuses)
          .map(([s, n]) => `${s}: ${n}`)
          .join(', ')} | ${k.unexpected + k.socketErrors} |`,
    ),
    '',
    `Orders: ${report.orders.accepted} accepted; ${report.orders.settledDuringLoad} settled during the ${report.durationS} s load, ` +
      `backlog ${report.orders.backlogAtEnd} at its end (peak ${report.orders.peakBacklog}), drained in ${report.orders.drainS.toFixed(1)} s: ` +
      `${report.orders.settledPerS} orders/s from first request to last settlement.`,
    '',
    '| process | pid | peak RSS MiB | CPU s during load and drain |',
    '|---|---|---|---|',
    ...report.processes.map(
      (p) => `| ${p.name} | ${p.pid} | ${mib(p.peakRssBytes)} | ${p.cpuSeconds.toFixed(1)} |`,
    ),
  ];
  return lines.join('\n');
}

function parsePids(values: string[]): { name: string; pid: number }[] {
  return values.map((value) => {
    const [name, pid] = value.split('=');
    if (!name || !pid || !/^\d+$/.test(pid)) throw new Error(`--pid NAME=PID, got '${value}'`);
    return { name, pid: Number(pid) };
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      url: { type: 'string', default: 'http://127.0.0.1:3000' },
      db: { type: 'string' },
      duration: { type: 'string', default: '20' },
      connections: { type: 'string', default: '20' },
      'over-limit-rate': { type: 'string', default: '300' },
      'seed-orders': { type: 'string', default: '10' },
      rate: { type: 'string' },
      pid: { type: 'string', multiple: true, default: [] },
      json: { type: 'string' },
    },
  });
  runLoad({
    url: values.url,
    store: storeFromEnv(
      values.db ? { ...process.env, DATABASE_URL: undefined, DB_PATH: values.db } : process.env,
    ),
    durationS: Number(values.duration),
    connections: Number(values.connections),
    overLimitRate: Number(values['over-limit-rate']),
    seedOrdersPerClient: Number(values['seed-orders']),
    ratePerS: values.rate ? Number(values.rate) : undefined,
    processes: parsePids(values.pid),
  }).then(
    (report) => {
      process.stdout.write(`${formatReport(report)}\n`);
      if (values.json) fs.writeFileSync(values.json, JSON.stringify(report, null, 2));
    },
    (err: unknown) => {
      process.stderr.write(`load test: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
