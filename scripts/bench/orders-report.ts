// The "Orders end to end" section of BENCHMARKS.md from the runs of scripts/bench/orders.ts: throughput,
// the CPU each order costs, and what that leaves on this machine's cores.
import os from 'node:os';
import { placementOf } from './cpu-affinity.js';
import { loadConfig } from '../../src/config/config.js';
import type { StoreKind } from './stores.js';

/** The whole machine's busy CPU, other users' included: how much of the cores this run had. */
export const MACHINE = 'machine';

/** The jobs a worker runs at once unless told: the service's own WORKER_CONCURRENCY default. */
export const DEFAULT_CONCURRENCY = loadConfig({}).WORKER_CONCURRENCY;

/** How the runs were made, as the section states it. */
export interface Setup {
  orders: number;
  stores: StoreKind[];
  workers: number[];
  rounds: number;
  /** Jobs per worker process. */
  concurrency: number;
  /** Whether the PostgreSQL server kept fsync and synchronous_commit on (--durable). */
  durable: boolean;
  /** The core --database-core gave the database server, if any; the rest of the run had the others. */
  databaseCore?: number;
  /** The sandbox processor's delay per authorisation, ms. */
  latencyMs: number;
  /** Orders settled end to end before the measured phases (--warmup). */
  warmup: number;
  /** Orders posted at once. */
  inFlight: number;
  /** Listings the orders are drawn from. */
  listings: number;
  /** BullMQ's rate for no-op jobs, and how many it ran. */
  noop: number;
  noopJobs: number;
  /** The stores' versions. */
  versions: string;
}

export interface Phase {
  /** Orders per second from the start of the phase to the last settlement. */
  rate: number;
  /** Orders accepted per second over HTTP in this phase. */
  acceptRate: number;
  /** Orders settled in the phase. */
  orders: number;
  /** Wall seconds over which `cpu` was spent. */
  seconds: number;
  /** CPU seconds of each process (and of the whole machine) in the phase. */
  cpu: Record<string, number>;
}

/** CPU milliseconds per order of this run's own processes. */
const cpuMsPerOrder = (phase: Phase): number =>
  (1000 * Object.entries(phase.cpu).reduce((sum, [name, cpu]) => sum + (name === MACHINE ? 0 : cpu), 0)) /
  phase.orders;

export interface Run {
  round: number;
  store: StoreKind;
  workers: number;
  drain: Phase;
  endToEnd: Phase;
  exitedCleanly: boolean;
}

const f0 = (n: number) => n.toFixed(0);
const f1 = (n: number) => n.toFixed(1);
const f2 = (n: number) => n.toFixed(2);

/** The run with one worker on the same store in the same round. */
const baseOf = (runs: Run[], run: Run) =>
  runs.find((r) => r.store === run.store && r.workers === 1 && r.round === run.round);
/** A round column when there are several. */
const roundCell = (s: Setup, r: Run) => (s.rounds > 1 ? `${r.round} | ` : '');
const roundHead = (s: Setup) => (s.rounds > 1 ? ['round | ', '--:|'] : ['', '']);

function throughputTable(s: Setup, runs: Run[]): string {
  const times = (run: Run, phase: 'drain' | 'endToEnd') => {
    const one = baseOf(runs, run)?.[phase].rate;
    return one ? `${f2(run[phase].rate / one)}×` : '';
  };
  return [
    `| ${roundHead(s)[0]}store | workers | accepted over HTTP, workers idle, orders/s | backlog drain, orders/s | × 1 worker | CPU ms per order, drain | end to end, orders/s | × 1 worker | CPU ms per order, end to end | all exited 0 on SIGTERM |`,
    `|${roundHead(s)[1]}---|--:|--:|--:|--:|--:|--:|--:|--:|---|`,
    ...runs.map(
      (r) =>
        `| ${roundCell(s, r)}${r.store} | ${r.workers} | ${f0(r.drain.acceptRate)} | ${f0(r.drain.rate)} | ${times(r, 'drain')} | ` +
        `${f1(cpuMsPerOrder(r.drain))} | ${f0(r.endToEnd.rate)} | ${times(r, 'endToEnd')} | ` +
        `${f1(cpuMsPerOrder(r.endToEnd))} | ${r.exitedCleanly ? 'yes' : 'no'} |`,
    ),
  ].join('\n');
}

function coresTable(s: Setup, runs: Run[]): string {
  const row = (r: Run, phase: 'drain' | 'endToEnd') => {
    const { cpu, seconds } = r[phase];
    const cores = (name: string) => (cpu[name] === undefined ? '–' : f1(cpu[name] / seconds));
    const workers = Object.keys(cpu).filter((name) => name.startsWith('worker'));
    const ours = Object.entries(cpu).reduce((sum, [name, c]) => sum + (name === MACHINE ? 0 : c), 0);
    return (
      `| ${roundCell(s, r)}${r.store} | ${r.workers} | ${phase === 'drain' ? 'backlog drain' : 'end to end'} | ${cores('web')} | ` +
      `${workers.map(cores).join(' + ')} | ${cores('database')} | ${cores('redis')} | ${cores('load generator')} | ` +
      `${f1(ours / seconds)} | ${cores(MACHINE)} |`
    );
  };
  return [
    `| ${roundHead(s)[0]}store | workers | phase | web | workers | database server | Redis | load generator | all of this run | whole machine |`,
    `|${roundHead(s)[1]}---|--:|---|--:|--:|--:|--:|--:|--:|--:|`,
    ...runs.flatMap((r) => [row(r, 'drain'), row(r, 'endToEnd')]),
  ].join('\n');
}

function ratios(s: Setup, runs: Run[]): string[] {
  return s.stores.flatMap((store) =>
    s.workers
      .filter((w) => w > 1)
      .map((workers) => {
        const each = runs.filter((r) => r.store === store && r.workers === workers);
        const list = (phase: 'drain' | 'endToEnd') =>
          each.map((r) => `**${f2(r[phase].rate / (baseOf(runs, r)?.[phase].rate ?? NaN))}×**`).join(', ');
        return (
          `- ${store === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, ${workers} workers against 1: ${list('drain')} draining ` +
          `a backlog, ${list('endToEnd')} end to end` +
          (store === 'postgres' && workers === 2 ? ' (aim: at least 1.6× draining)' : '') +
          '.'
        );
      }),
  );
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

/** CPU milliseconds per order spent by the processes `name` picks, mean over the phases. */
function msPerOrder(phases: Phase[], name: (process: string) => boolean): number {
  return mean(
    phases.map(
      (p) => (1000 * Object.entries(p.cpu).reduce((sum, [n, c]) => sum + (name(n) ? c : 0), 0)) / p.orders,
    ),
  );
}

/**
 * What bounds each store's drain: the CPU an order costs against the cores of this machine, and how that cost
 * grows with the workers (means of the rounds).
 */
function limits(s: Setup, runs: Run[]): string[] {
  const cores = os.cpus().length;
  return s.stores.flatMap((store) => {
    const drains = (workers: number) =>
      runs.filter((r) => r.store === store && r.workers === workers).map((r) => r.drain);
    const ones = drains(1);
    if (ones.length === 0) return [];
    const ms = (name: (n: string) => boolean) => f1(msPerOrder(ones, name));
    const perOrder = mean(ones.map(cpuMsPerOrder));
    const rate = mean(ones.map((one) => one.rate));
    const machine = mean(ones.map((one) => (one.cpu[MACHINE] ?? 0) / one.seconds));
    const cap = (cores * 1000) / perOrder;
    const aim = 1.6 * rate;
    const database = store === 'postgres' ? `, database server ${ms((n) => n === 'database')}` : '';
    const growth = s.workers.map((w) => `${f1(mean(drains(w).map(cpuMsPerOrder)))} ms with ${w}`).join(', ');
    return [
      `- ${store === 'sqlite' ? 'SQLite' : 'PostgreSQL'}: while one worker drains, an order costs ${f1(perOrder)} ms of CPU ` +
        `across this run's processes (workers ${ms((n) => n.startsWith('worker'))}${database}, ` +
        `Redis ${ms((n) => n === 'redis')}, web and load generator ${ms((n) => n === 'web' || n === 'load generator')}): ` +
        `${cores} cores can settle at most ~${f0(cap)} orders/s however many workers run. One worker drained at ${f0(rate)} ` +
        `(${f0((100 * rate) / cap)} % of that) with the whole machine ${f1(machine)} cores busy; ` +
        `1.6× that rate (${f0(aim)}/s) would take ${f1((aim * perOrder) / 1000)} cores. ` +
        `More workers cost more per order (${growth}): more processes share the same cores and wait on the same rows.`,
    ];
  });
}

/** Whether 1.6× the one-worker PostgreSQL drain would take more CPU than this machine has. */
function aimNeedsMoreCores(runs: Run[]): boolean {
  const ones = runs.filter((r) => r.store === 'postgres' && r.workers === 1).map((r) => r.drain);
  if (ones.length === 0) return false;
  const rate = mean(ones.map((one) => one.rate));
  return (1.6 * rate * mean(ones.map(cpuMsPerOrder))) / 1000 > os.cpus().length;
}

/** The "Orders end to end" section of BENCHMARKS.md. */
export function ordersSection(s: Setup, runs: Run[]): string {
  const command =
    `node --import tsx scripts/bench/orders.ts --orders ${s.orders} --stores ${s.stores.join(',')} ` +
    `--workers ${s.workers.join(',')}${s.rounds > 1 ? ` --rounds ${s.rounds}` : ''}` +
    `${s.durable ? ' --durable' : ''}${s.latencyMs ? ` --latency-ms ${s.latencyMs}` : ''}` +
    `${s.concurrency !== DEFAULT_CONCURRENCY ? ` --concurrency ${s.concurrency}` : ''}${s.warmup ? ` --warmup ${s.warmup}` : ''}` +
    `${s.databaseCore !== undefined ? ` --database-core ${s.databaseCore}` : ''}`;
  return [
    `Command: \`${command}\` (${os.cpus().length} cores, ${s.versions})`,
    ...(s.databaseCore !== undefined
      ? [
          '',
          `Cores: ${placementOf(s.databaseCore)} (what limits the drain, below, counts every core together).`,
        ]
      : []),
    '',
    'Each run: a fresh store (a SQLite file, or a new database on one private PostgreSQL server started with',
    s.durable
      ? '`fsync`, `synchronous_commit` and `full_page_writes` on, as operators run it), a fresh queue on one'
      : '`fsync`, `synchronous_commit` and `full_page_writes` off, as scripts/postgres.ts starts it for tests), a fresh queue on one',
    `private Redis, one web process, N worker processes of ${s.concurrency} jobs each (DB_POOL_SIZE 10 per process), ` +
      `${s.latencyMs ? `a payment latency of ${s.latencyMs} ms,` : 'no payment latency,'}` +
      `${s.warmup ? ` warmed up by ${s.warmup} orders settled end to end before anything is measured,` : ''}`,
    `logs at info as JSON lines to a file. Orders of one copy of one of ${s.listings} listings drawn at random, posted by ${s.inFlight}`,
    'concurrent signed clients with `Prefer: respond-async`. **Backlog drain**: ' +
      `${s.orders} orders accepted over HTTP while the queue is paused, then the queue resumed once every worker is ready;`,
    `orders/s from the resume to the last settlement, the workers alone. **End to end**: ${s.orders} more orders posted while`,
    'the workers run; orders/s from the first post to the last settlement. CPU ms per order: the CPU of every process',
    'of the run in that phase (web, workers, database server, Redis, load generator) divided by the orders.',
    '',
    throughputTable(s, runs),
    '',
    ...ratios(s, runs),
    '- Before the store port (2026-11-21, SQLite only, `bench-orders.ts 1000`: one listing, logs at warn, workers',
    '  started with the backlog waiting): 1 worker drained 626 and ran 234 orders/s end to end, 2 workers 599 and 260.',
    `- BullMQ alone: ${f0(s.noop)} no-op jobs/s (${s.noopJobs} jobs added in bulk, one worker of concurrency ${s.concurrency}, same Redis, same run).`,
    '',
    'What limits the drain (CPU from /proc; the database server counts the PostgreSQL server and all its backends;',
    'SQLite runs inside the web and worker processes):',
    '',
    ...limits(s, runs),
    '',
    ...(aimNeedsMoreCores(runs)
      ? [
          'So the aim of 1.6× with 2 workers on PostgreSQL cannot be met, or refuted, on this machine: one worker',
          'already keeps its cores busy, and a second only adds its own overhead. It needs a host with cores to spare,',
          'or the database server on another host. What would lower the cost of an order is fewer statements and',
          'round trips per order (each is parsed and planned afresh).',
          '',
        ]
      : []),
    'Cores busy during each phase (CPU seconds per second of the phase; "whole machine" includes what other users of',
    'this shared machine ran meanwhile). Throughput varies a lot between runs here (compare the rounds); compare',
    'within one round.',
    '',
    coresTable(s, runs),
  ].join('\n');
}
