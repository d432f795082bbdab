// The "Batches" section of BENCHMARKS.md from the phases of scripts/bench/batches.ts.
import os from 'node:os';
import type { StoreKind } from './stores.js';

export interface BatchSetup {
  single: number;
  batched: number;
  batch: number;
  inFlight: number;
  rounds: number;
  /** The machine's 1-minute load average at the start and the end of the run: other work on the cores. */
  load: [number, number];
}

/** One phase: `orders` accepted in `seconds`, alone (one request each) or in batches. */
export interface BatchRun {
  store: StoreKind;
  mode: 'single' | 'batch';
  orders: number;
  seconds: number;
  /** CPU seconds each process spent in the phase: web, generator, redis, database (PostgreSQL's server). */
  cpu: Record<string, number>;
}

const AIM = 10;
// The service's own processes: what a deployment pays per order (the generator is the caller's cost).
const SERVICE = ['web', 'redis', 'database'];

const total = (runs: readonly BatchRun[], pick: (r: BatchRun) => number) =>
  runs.reduce((sum, r) => sum + pick(r), 0);
const rate = (runs: readonly BatchRun[]) => total(runs, (r) => r.orders) / total(runs, (r) => r.seconds);
/** CPU milliseconds per order of the named processes. */
const cpuPerOrder = (runs: readonly BatchRun[], names: readonly string[]) =>
  (1000 * total(runs, (r) => names.reduce((s, n) => s + (r.cpu[n] ?? 0), 0))) / total(runs, (r) => r.orders);

function row(store: StoreKind, mode: BatchRun['mode'], runs: readonly BatchRun[]): string {
  const rates = runs.map((r) => (r.orders / r.seconds).toFixed(0)).join(' / ');
  const ms = (names: string[]) => cpuPerOrder(runs, names).toFixed(3);
  const cells = [
    store,
    mode === 'single' ? 'single requests' : 'batches',
    String(total(runs, (r) => r.orders)),
    rates,
    `**${rate(runs).toFixed(0)}**`,
    ms(['web']),
    ms(['redis']),
    store === 'postgres' ? ms(['database']) : 'in web',
    `**${ms(SERVICE)}**`,
    ms(['generator']),
  ];
  return `| ${cells.join(' | ')} |`;
}

function ratios(stores: readonly StoreKind[], runs: readonly BatchRun[]): string[] {
  return stores.map((store) => {
    const single = runs.filter((r) => r.store === store && r.mode === 'single');
    const batch = runs.filter((r) => r.store === store && r.mode === 'batch');
    const byRate = rate(batch) / rate(single);
    const byCpu = cpuPerOrder(single, SERVICE) / cpuPerOrder(batch, SERVICE);
    const verdict = (ratio: number) => (ratio >= AIM ? `meets the ${AIM}× aim` : `below the ${AIM}× aim`);
    return (
      `- ${store}: **${byRate.toFixed(1)}×** the orders per second (${verdict(byRate)}); ` +
      `${byCpu.toFixed(1)}× fewer service CPU milliseconds per order (${verdict(byCpu)}).`
    );
  });
}

export function batchesSection(setup: BatchSetup, runs: readonly BatchRun[]): string {
  const stores = [...new Set(runs.map((r) => r.store))];
  const lines = [
    `Command: \`BENCH_RUNTIME=tsx node --import tsx scripts/bench/batches.ts --single ${setup.single} ` +
      `--batched ${setup.batched} --batch ${setup.batch} --in-flight ${setup.inFlight} --rounds ${setup.rounds}\``,
    '',
    `Machine: ${os.cpus()[0]?.model ?? 'unknown CPU'} (${os.cpus().length} cores), Node ${process.version}; the load ` +
      'generator, Redis, the database and the web process share these cores; 1-minute load average ' +
      `${setup.load[0].toFixed(1)} at the start, ${setup.load[1].toFixed(1)} at the end.`,
    '',
    'One web process (`src/server.ts`, logs at info to a file), no worker: the acceptance rate only. Every order is ' +
      `signed afresh and buys one copy of one of 10 listings; ${setup.inFlight} requests in flight in both modes. ` +
      '**Single**: `POST /v1/orders` with `Prefer: respond-async` (answered 2010, items QUEUED). **Batches**: ' +
      `\`POST /v1/order-batches\` with ${setup.batch} real orders each (2004, every entry 2010). Phases alternate ` +
      `(single, batches) ${setup.rounds} times on the same process and store, after a warm-up of both; every order ` +
      'is checked stored. CPU is read from /proc per process; "service" is web + Redis + database, what a ' +
      'deployment spends per order (SQLite runs inside web); the generator signs and sends.',
    '',
    '| store | mode | orders | orders/s per round | orders/s | web ms/order | Redis | database | service | generator |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  for (const store of stores) {
    lines.push(
      row(
        store,
        'single',
        runs.filter((r) => r.store === store && r.mode === 'single'),
      ),
    );
    lines.push(
      row(
        store,
        'batch',
        runs.filter((r) => r.store === store && r.mode === 'batch'),
      ),
    );
  }
  lines.push('', 'Batches against single requests:', '', ...ratios(stores, runs));
  return lines.join('\n');
}
