// The "Reads charged by their cost" section of BENCHMARKS.md from the runs of scripts/bench/read-costs.ts: a
// search page's cost, and another client's figures under each attack against the aims.
import { ITEMS_PER_READ } from '../../src/http/order-cost.js';
import { MAX_PAGE_ITEMS } from '../../src/services/search-orders.js';
import { SEARCH_THREADS_MAX, THREAD_HEAP_MB } from '../../src/store/sqlite/search-thread.js';
import type { VictimSeen } from '../../test/helpers/read-attacks.js';
import { percentile } from './samples.js';

export const ATTACKS = ['pages', 'queries', 'searches', 'receivers'] as const;
export type AttackName = (typeof ATTACKS)[number];

export interface PageRow {
  itemsPerOrder: number;
  limit: number;
  orders: number;
  items: number;
  bytes: number;
  /** What the page cost the client against its rate limit. */
  tokens: number;
  p50: number;
  p99: number;
}

export interface ThreadsAndRss {
  threads: number;
  rssMiB: number;
}

export interface AttackRun {
  attack: AttackName;
  alone: VictimSeen;
  during: VictimSeen;
  /** What B was answered, in words. */
  answers: string;
  /** The wide searches: one's time alone (p50, ms), the web's DATABASE_TIMEOUT_MS, and on SQLite its threads and RSS. */
  aloneMs?: number;
  timeoutMs?: number;
  web?: { before: ThreadsAndRss; most: ThreadsAndRss; after: ThreadsAndRss };
  /** The receivers: the p50 lateness (ms) of A's events. */
  webhookP50?: { alone: number; during: number };
}

export interface StoreRun {
  kind: 'sqlite' | 'postgres';
  pages: PageRow[];
  attacks: AttackRun[];
}

/** The issue's aims for A while B attacks. */
export const AIMS = { healthzP99Ms: 200, searchP99Ms: 500, ordersShare: 0.5, webhookP50Ms: 1000 };

/** `2 × order 503, 1 × search 429`, or `none`. */
function tallied(answers: string[]): string {
  const by = new Map<string, number>();
  for (const answer of answers) by.set(answer, (by.get(answer) ?? 0) + 1);
  return [...by].map(([answer, n]) => `${n} × ${answer}`).join(', ') || 'none';
}

/** A's figures in one phase. */
function figures(seen: VictimSeen) {
  const accepted = seen.orderStatuses.filter((s) => s === 200).length;
  return {
    healthz: percentile(seen.healthz, 99),
    search: percentile(seen.search, 99),
    ordersPerS: accepted / seen.seconds,
    unavailable: seen.refused.filter((r) => r.endsWith(' 503')).length,
    refused: tallied(seen.refused),
  };
}

/** The aims `run` missed, by name (none: all met). */
export function missed(run: AttackRun): string[] {
  const alone = figures(run.alone);
  const during = figures(run.during);
  const out: string[] = [];
  if (!(during.healthz <= AIMS.healthzP99Ms)) out.push('/healthz');
  if (!(during.search <= AIMS.searchP99Ms)) out.push('search');
  if (!(during.ordersPerS >= AIMS.ordersShare * alone.ordersPerS)) out.push('orders/s');
  if (during.unavailable > 0) out.push('503s');
  if (run.webhookP50 && !(run.webhookP50.during <= AIMS.webhookP50Ms)) out.push('webhook p50');
  if (run.web) {
    if (run.web.most.threads > run.web.before.threads + SEARCH_THREADS_MAX) out.push('threads');
    if (run.web.most.rssMiB > run.web.before.rssMiB + RSS_ALLOWANCE_MIB) out.push('RSS');
  }
  return out;
}

/** What live search threads may add to the web's RSS: each one's heap, and as much again for the rest of it. */
const RSS_ALLOWANCE_MIB = SEARCH_THREADS_MAX * THREAD_HEAP_MB * 2;

const ms = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));
const kb = (bytes: number) => (bytes / 1024).toFixed(bytes < 10_240 ? 1 : 0);
const storeName = (kind: StoreRun['kind']) => (kind === 'sqlite' ? 'SQLite' : 'PostgreSQL');

function attackLabel(run: AttackRun, kind: StoreRun['kind']): string {
  switch (run.attack) {
    case 'pages':
      return '100 × `limit=100` at once, each second';
    case 'queries':
      return '16 KB queries, 4 every 200 ms';
    case 'searches':
      return kind === 'sqlite'
        ? `20 wide searches (${ms(run.aloneMs!)} ms alone), given up past ${run.timeoutMs} ms`
        : `20 wide searches (${ms(run.aloneMs!)} ms alone) in flight, time-out ${run.timeoutMs} ms`;
    case 'receivers':
      return '8 receivers answering after 6 s';
  }
}

function other(run: AttackRun): string {
  if (run.webhookP50) return `webhook p50 ${ms(run.webhookP50.alone)} → ${ms(run.webhookP50.during)} ms`;
  if (run.web)
    return `threads ${run.web.before.threads} → ${run.web.most.threads} (after ${run.web.after.threads}), RSS ${run.web.before.rssMiB} → ${run.web.most.rssMiB} MiB`;
  return '';
}

function attackRow(run: AttackRun, kind: StoreRun['kind']): string {
  const a = figures(run.alone);
  const d = figures(run.during);
  const aims = missed(run);
  return `| ${storeName(kind)} | ${attackLabel(run, kind)} | ${run.answers} | ${ms(a.healthz)} → ${ms(d.healthz)} | ${ms(a.search)} → ${ms(d.search)} | ${a.ordersPerS.toFixed(1)} → ${d.ordersPerS.toFixed(1)} | ${d.refused} | ${other(run)} | ${aims.length === 0 ? 'met' : `not met: ${aims.join(', ')}`} |`;
}

function pageRow(kind: StoreRun['kind'], itemsPerOrder: number, rows: PageRow[]): string {
  const cells = rows
    .filter((r) => r.itemsPerOrder === itemsPerOrder)
    .sort((x, y) => x.limit - y.limit)
    .map((r) => `${r.orders} / ${r.items}, ${kb(r.bytes)} KB, ${r.tokens} | ${ms(r.p50)} / ${ms(r.p99)}`);
  return `| ${storeName(kind)} | ${itemsPerOrder} | ${cells.join(' | ')} |`;
}

export function readCostsSection(
  runs: StoreRun[],
  run: {
    command: string;
    seconds: number;
    iterations: number;
    pageOrders: number;
    wide: { orders: number; items: number };
    load: [number, number];
    cores: number;
  },
): string {
  const itemsPerOrder = [...new Set(runs.flatMap((r) => r.pages.map((p) => p.itemsPerOrder)))];
  const limits = [...new Set(runs.flatMap((r) => r.pages.map((p) => p.limit)))].sort((x, y) => x - y);
  return [
    `Command: \`${run.command} --write\` (${run.cores} cores, load average ${run.load[0].toFixed(1)} at the start, ${run.load[1].toFixed(1)} at the end)`,
    '',
    `A search page's cost through one web process (no rate limit): clients of ${run.pageOrders} orders of 1, 25 or 250 items, their first page, ${run.iterations} searches one after another per cell. A page ends before the order that would take it past ${MAX_PAGE_ITEMS} items; it costs one token per ${ITEMS_PER_READ} items (at least one), taken once it is read.`,
    '',
    `| store | items per order | ${limits.map((l) => `limit ${l}: orders / items, size, tokens | p50 / p99 ms`).join(' | ')} |`,
    `|---|--:|${limits.map(() => '---|--:|').join('')}`,
    ...runs.flatMap((r) => itemsPerOrder.map((n) => pageRow(r.kind, n, r.pages))),
    '',
    `Another client A (its \`/healthz\`, \`limit=5\` searches and orders, each every 50 ms at most) for ${run.seconds} s alone, then ${run.seconds} s while B attacks (alone → during): B's pages of ${run.pageOrders} orders of 250 items and its 16 KB queries against the default rate limit; its wide searches (every item of a window of ${run.wide.orders.toLocaleString('en')} orders of ${run.wide.items} items read, none matching), 20 in flight with no rate limit, DATABASE_TIMEOUT_MS 600 ms on PostgreSQL and a third of one search's time alone on SQLite (each given up on, its thread let go; the web's threads and RSS before → highest during, and 1 s after); its 8 slow receivers with 992 deliveries waiting, A's events delivered by one worker. Aims during: /healthz p99 ≤ ${AIMS.healthzP99Ms} ms, search p99 ≤ ${AIMS.searchP99Ms} ms, orders/s ≥ half of alone, no 503, webhook p50 ≤ ${AIMS.webhookP50Ms} ms; threads at most ${SEARCH_THREADS_MAX} and RSS at most ${RSS_ALLOWANCE_MIB} MiB above before.`,
    '',
    "| store | B's attack | B's answers | A's /healthz p99 ms | A's search p99 ms | A's orders/s | A's answers not 200 | other | aims |",
    '|---|---|---|--:|--:|--:|---|---|---|',
    ...runs.flatMap((r) => r.attacks.map((a) => attackRow(a, r.kind))),
  ].join('\n');
}
