// The "Orders, the callers' shape" section of BENCHMARKS.md from scripts/bench/orders.ts --shape callers: one
// client with many orders in flight on a few hot listings, durable commits on both stores, cold and warm
// processes, beside the references the aims are stated against (a bare Express handler, pgbench).
import os from 'node:os';
import { placementOf } from './cpu-affinity.js';
import type { StoreKind } from './stores.js';
import { MACHINE } from './orders-report.js';

/** Processes started and measured from their first request, or after a warm-up of the same orders. */
export type Start = 'cold' | 'warm';

export interface CallersRun {
  round: number;
  store: StoreKind;
  start: Start;
  workers: number;
  orders: number;
  /** Orders accepted (2010) per second, from the first post to the last answer. */
  acceptRate: number;
  /** Orders final per second, from the first post to the last settlement. */
  finalRate: number;
  /** CPU seconds of each process (and of the whole machine) from the first post until all were final. */
  cpu: Record<string, number>;
  seconds: number;
  exitedCleanly: boolean;
  /** Commands Redis ran per order over the run (INFO commandstats: those run inside scripts included). */
  redisCommands: number;
}

export interface CallersSetup {
  command: string;
  stores: StoreKind[];
  starts: Start[];
  orders: number;
  warmup: number;
  inFlight: number;
  listings: number;
  concurrency: number;
  databaseCore?: number;
  versions: string;
  /** The bare Express handler's requests/s for the same body, one figure per round. */
  bare: { rps: number; cpuUsPerRequest: number }[];
  /** pgbench's tps on the same server, before and after the runs (empty without PostgreSQL). */
  pgbench: number[];
}

const f0 = (n: number) => n.toFixed(0);
const f2 = (n: number) => n.toFixed(2);
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

/** CPU ms per order of the processes `pick` names. */
export function msPerOrder(run: Pick<CallersRun, 'cpu' | 'orders'>, pick: (name: string) => boolean): number {
  const cpu = Object.entries(run.cpu).reduce((sum, [name, c]) => sum + (pick(name) ? c : 0), 0);
  return (1000 * cpu) / run.orders;
}

const isWorker = (name: string) => name.startsWith('worker');

function runsTable(runs: CallersRun[]): string {
  const cell = (run: CallersRun, name: string) =>
    run.cpu[name] === undefined ? '–' : f2(msPerOrder(run, (n) => n === name));
  return [
    '| round | store | start | accepted/s | accepted→final, orders/s | CPU ms per order: web | workers | database server | Redis | load generator | whole machine cores busy | all exited 0 |',
    '|--:|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|',
    ...runs.map(
      (r) =>
        `| ${r.round} | ${r.store} | ${r.start} | ${f0(r.acceptRate)} | ${f0(r.finalRate)} | ${cell(r, 'web')} | ` +
        `${f2(msPerOrder(r, isWorker))} | ${cell(r, 'database')} | ${cell(r, 'redis')} | ${cell(r, 'load generator')} | ` +
        `${((r.cpu[MACHINE] ?? 0) / r.seconds).toFixed(1)} | ${r.exitedCleanly ? 'yes' : 'no'} |`,
    ),
  ].join('\n');
}

/** The aims of the callers' shape against the means of the runs of each start. */
export function aims(s: CallersSetup, runs: CallersRun[]): string[] {
  const bare = mean(s.bare.map((b) => b.rps));
  const pgbench = s.pgbench.length > 0 ? mean(s.pgbench) : NaN;
  return s.starts.flatMap((start) => {
    const of = (store: StoreKind) => runs.filter((r) => r.store === store && r.start === start);
    const finalOf = (store: StoreKind) => mean(of(store).map((r) => r.finalRate));
    const webOf = (store: StoreKind) => mean(of(store).map((r) => msPerOrder(r, (n) => n === 'web')));
    const outsideOf = (store: StoreKind) =>
      mean(of(store).map((r) => msPerOrder(r, (n) => n === 'web' || isWorker(n))));
    const lines: string[] = [];
    if (of('sqlite').length > 0)
      lines.push(
        `- ${start}: SQLite accepted→final ${f0(finalOf('sqlite'))}/s = **${f2(finalOf('sqlite') / bare)}×** the bare ` +
          `Express handler's ${f0(bare)} requests/s (aim: at least 0.25×).`,
      );
    if (of('postgres').length > 0) {
      const pg = finalOf('postgres');
      const parts = [
        of('sqlite').length > 0
          ? `**${f2(pg / finalOf('sqlite'))}×** SQLite's (aim: at least 0.8×${s.databaseCore === undefined ? ', with --database-core' : ''})`
          : '',
        Number.isNaN(pgbench)
          ? ''
          : `**${f2(pg / pgbench)}×** pgbench's ${f0(pgbench)} tps (aim: at least 0.2×)`,
      ].filter(Boolean);
      lines.push(`- ${start}: PostgreSQL accepted→final ${f0(pg)}/s = ${parts.join(', ')}.`);
      if (of('sqlite').length > 0)
        lines.push(
          `- ${start}: CPU ms per order outside the database server, web (the acceptance path) / web and workers: ` +
            `PostgreSQL ${f2(webOf('postgres'))} / ${f2(outsideOf('postgres'))}, SQLite ${f2(webOf('sqlite'))} / ` +
            `${f2(outsideOf('sqlite'))} (aim: PostgreSQL's web no dearer than SQLite's; SQLite's commits run inside ` +
            `its web and workers, PostgreSQL's in the database server).`,
        );
    }
    return lines;
  });
}

/** The section: how the runs were made, each run, and the aims. */
export function callersSection(s: CallersSetup, runs: CallersRun[]): string {
  const bare = s.bare.map((b) => `${f0(b.rps)} (${f0(b.cpuUsPerRequest)} µs CPU per request)`).join(', ');
  return [
    `Command: \`${s.command}\` (${os.cpus().length} cores, ${s.versions})`,
    '',
    `The callers' shape: one client with ${s.inFlight} orders in flight, each order one copy of each of the`,
    `same ${s.listings} listings (bestsellers: every order takes stock of the same rows), posted with`,
    '`Prefer: respond-async`; accepted/s from the first post to the last answer, accepted→final from the first post',
    `to the last settlement, ${s.orders} orders per run. Durable commits on both stores: SQLite with`,
    'its log flushed before each answer (the default: `synchronous = NORMAL` and an fdatasync off the event loop,',
    '`wal-flusher.ts`), PostgreSQL (one private server) with `fsync`, `synchronous_commit` and',
    '`full_page_writes` on. Each run: a fresh store and queue, one web and the workers as the Procfile runs them',
    `(compiled), ${s.concurrency} jobs per worker; **cold**: measured from the first request after the processes`,
    `are ready; **warm**: after ${s.warmup} orders of the same shape settled. CPU ms per order from /proc (user +`,
    'system, the database server with all its backends) over the same window, divided by the orders.',
    ...(s.databaseCore !== undefined ? [`Cores: ${placementOf(s.databaseCore)}.`] : []),
    '',
    runsTable(runs),
    '',
    `References in the same run: a bare Express handler parsing the same body (scripts/bench/servers.ts, autocannon, ` +
      `${s.inFlight} connections): ${bare} requests/s` +
      (s.pgbench.length > 0
        ? `; pgbench on the same server (TPC-B-like, -M prepared, 8 clients, 20 s) before and after the runs: ${s.pgbench.map(f0).join(', ')} tps.`
        : '.'),
    '',
    ...aims(s, runs),
  ].join('\n');
}
