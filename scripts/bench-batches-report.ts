// The "Batches" section of BENCHMARKS.md from the phases of scripts/bench-batches.ts.
import os from 'node:os';
import type { StoreKind } from './bench-stores.js';

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
  /** CPU seconds of the web process and of the load generator in the phase. */
  webCpu: number;
  generatorCpu: number;
}

const AIM = 10;

const rate = (runs: readonly BatchRun[]) =>
  runs.reduce((n, r) => n + r.orders, 0) / runs.reduce((s, r) => s + r.seconds, 0);
const cpuMsPerOrder = (runs: readonly BatchRun[], key: 'webCpu' | 'generatorCpu') =>
  (1000 * runs.reduce((s, r) => s + r[key], 0)) / runs.reduce((n, r) => n + r.orders, 0);

function row(store: StoreKind, mode: BatchRun['mode'], runs: readonly BatchRun[]): string {
  const rates = runs.map((r) => (r.orders / r.seconds).toFixed(0)).join(' / ');
  return (
    `| ${store} | ${mode === 'single' ? 'single requests' : 'batches'} | ${runs.reduce((n, r) => n + r.orders, 0)} ` +
    `| ${rates} | **${rate(runs).toFixed(0)}** | ${cpuMsPerOrder(runs, 'webCpu').toFixed(3)} ` +
    `| ${cpuMsPerOrder(runs, 'generatorCpu').toFixed(3)} |`
  );
}

export function batchesSection(setup: BatchSetup, runs: readonly BatchRun[]): string {
  const stores = [...new Set(runs.map((r) => r.store))];
  const lines = [
    `Command: \`node --import tsx scripts/bench-batches.ts --single ${setup.single} --batched ${setup.batched} ` +
      `--batch ${setup.batch} --in-flight ${setup.inFlight} --rounds ${setup.rounds}\``,
    '',
    `Machine: ${os.cpus()[0]?.model ?? 'unknown CPU'} (${os.cpus().length} cores), Node ${process.version}; the load ` +
      'generator, Redis, the database and the web process share these cores; 1-minute load average ' +
      `${setup.load[0].toFixed(1)} at the start, ${setup.load[1].toFixed(1)} at the end.`,
    '',
    'One web process (`src/server.ts`, logs at info to a file), no worker: the acceptance rate only. Every order is ' +
      `signed afresh and buys one copy of one of ${10} listings; ${setup.inFlight} requests in flight in both modes. ` +
      '**Single**: `POST /v1/orders` with `Prefer: respond-async` (answered 2010, items QUEUED). **Batches**: ' +
      `\`POST /v1/order-batches\` with ${setup.batch} real orders each (2004, every entry 2010). Phases alternate ` +
      `(single, batches) ${setup.rounds} times on the same process and store, after a warm-up of both; every order ` +
      'is checked stored.',
    '',
    '| store | mode | orders | orders/s per round | orders/s | web CPU ms/order | generator CPU ms/order |',
    '|---|---|--:|--:|--:|--:|--:|',
  ];
  const ratios: string[] = [];
  for (const store of stores) {
    const single = runs.filter((r) => r.store === store && r.mode === 'single');
    const batch = runs.filter((r) => r.store === store && r.mode === 'batch');
    lines.push(row(store, 'single', single), row(store, 'batch', batch));
    const ratio = rate(batch) / rate(single);
    ratios.push(`${store} **${ratio.toFixed(1)}×** (${ratio >= AIM ? 'meets' : 'below'} the ${AIM}× aim)`);
  }
  lines.push('', `Batches against single requests: ${ratios.join(', ')}.`);
  return lines.join('\n');
}
