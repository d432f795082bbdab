// Where a lone order's wait goes, from the service's own OpenTelemetry spans as the tests' OTLP receiver
// takes them (JSON): the stages of each order read off its spans (web, worker, store, payments, BullMQ), lined up
// per order on one clock. Used by `bench-latency.ts --stages`.
import type { ReceivedSpan } from '../../test/helpers/otlp-receiver.js';
import { percentile } from './samples.js';

/** The environment that makes a service process export its spans to `url` as JSON, within ~100 ms of their end. */
export const tracingEnv = (url: string): Record<string, string> => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_BSP_SCHEDULE_DELAY: '100',
  OTEL_BSP_MAX_QUEUE_SIZE: '65536',
  OTEL_TRACES_SAMPLER: 'always_on',
});

/** A span's start and end in ms since the epoch (every process of the run on one machine's clock). */
const startMs = (span: ReceivedSpan) => Number(span.startNs / 1000n) / 1000;
const endMs = (span: ReceivedSpan) => Number(span.endNs / 1000n) / 1000;

/** Where a boundary is read: the start or the end of the first span of this name in the order's trace. */
interface Boundary {
  what: string;
  span: string;
  at: 'start' | 'end';
  /** Not on every order's way: a stage after it runs from the boundary before it in an order without it. */
  optional?: true;
}

/** A lone order's way, in the order it goes; each stage is the time from one boundary to the next. */
const BOUNDARIES: readonly Boundary[] = [
  { what: 'web: request in', span: 'POST', at: 'start' },
  { what: 'web: acceptance begins (signature, parse, price done)', span: 'store.orders.accept', at: 'start' },
  // Not flushed by the web on SQLite, nor the reservation by the worker: the settlement's flush covers both
  // (flushed-store.ts).
  { what: 'web: acceptance committed', span: 'store.orders.accept', at: 'end' },
  { what: 'web: job added (BullMQ add answered)', span: 'add orders.process-order', at: 'end' },
  { what: 'worker: job picked up (BullMQ process span)', span: 'process orders', at: 'start' },
  { what: 'worker: reservation committed (beginAttempt)', span: 'store.processing.beginAttempt', at: 'end' },
  { what: 'worker: payment authorised', span: 'payment.authorize', at: 'end' },
  { what: 'worker: settlement committed (flushed, on SQLite)', span: 'store.processing.settle', at: 'end' },
  { what: 'worker: outcome announced (PUBLISH issued)', span: 'publish', at: 'start' },
  // An order whose end carries its answer (protocol 2) is not read back: the web answers from the message.
  {
    what: 'web: hears it, when it reads the order back (no span: the start of that read)',
    span: 'store.orders.get',
    at: 'start',
    optional: true,
  },
  { what: 'web: order read back', span: 'store.orders.get', at: 'end', optional: true },
  { what: 'web: answer written (request span ends)', span: 'POST', at: 'end' },
];

export interface Stage {
  from: string;
  to: string;
  /** Mean ms over the orders, their fastest and slowest tenth left out. */
  ms: number;
  /** Orders whose trace had both boundaries' spans. */
  orders: number;
}

export interface StageReport {
  store: string;
  service: string;
  /** Lone orders whose web request span came. */
  orders: number;
  /** The traced wait (the web's request span) at p50, ms. */
  waitP50: number;
  stages: Stage[];
}

/** The mean of the middle 80 %: start times are whole ms (below), so a median of a sub-ms stage is 0 or 1. */
function trimmedMean(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const cut = Math.floor(sorted.length / 10);
  const middle = sorted.slice(cut, sorted.length - cut);
  return middle.reduce((sum, v) => sum + v, 0) / middle.length;
}

/**
 * The stages of each lone order, from the spans of its trace (the web's request, BullMQ's add and process, the
 * store port's operations, the payment gateway's, ioredis's commands, all in one trace: the job carries its
 * context). OpenTelemetry's JS SDK takes a span's start from Date.now() (whole ms) and its end as that start
 * plus a precise duration, so each boundary is off by under 1 ms, uniformly: a stage's mean over many orders is
 * right, a single order's or a median is not.
 */
export function stagesOf(spans: readonly ReceivedSpan[]): Omit<StageReport, 'store' | 'service'> {
  const traces = new Map<string, ReceivedSpan[]>();
  for (const span of spans) {
    const list = traces.get(span.traceId);
    if (list) list.push(span);
    else traces.set(span.traceId, [span]);
  }
  const orders = [...traces.values()].filter((list) =>
    list.some((s) => s.service === 'web' && s.name === 'POST' && s.kind === SERVER),
  );
  const at = (list: readonly ReceivedSpan[], b: Boundary): number | undefined => {
    const span = list
      .filter((s) => s.name === b.span)
      .reduce<ReceivedSpan | undefined>(
        (first, s) => (first && first.startNs <= s.startNs ? first : s),
        undefined,
      );
    return span && (b.at === 'start' ? startMs(span) : endMs(span));
  };
  /** Where the stage ending at boundary `i + 1` begins in an order: the boundary before it, or before an optional one it lacks. */
  const from = (list: readonly ReceivedSpan[], i: number): number | undefined => {
    let j = i;
    while (j > 0 && BOUNDARIES[j]!.optional && at(list, BOUNDARIES[j]!) === undefined) j -= 1;
    return at(list, BOUNDARIES[j]!);
  };
  const stages = BOUNDARIES.slice(1).map((to, i): Stage => {
    const gaps: number[] = [];
    for (const list of orders) {
      const [a, b] = [from(list, i), at(list, to)];
      if (a !== undefined && b !== undefined) gaps.push(b - a);
    }
    const what = BOUNDARIES[i]!.what;
    return { from: what, to: to.what, ms: gaps.length ? trimmedMean(gaps) : NaN, orders: gaps.length };
  });
  const waits = orders.map((list) => list.find((s) => s.name === 'POST')!).map((s) => endMs(s) - startMs(s));
  return { orders: orders.length, waitP50: percentile(waits, 50), stages };
}

/** OTLP's SpanKind of a server span. */
const SERVER = 2;

/** The stages as a Markdown table, each with its share of the sum of the stages. */
export function stagesTable(reports: readonly StageReport[], orders: number, warmup: number): string {
  const lines = [
    `Stages of a lone order, from a separate traced pass (${orders} lone orders timed after ${warmup} not timed,` +
      ' every span exported as OTLP JSON to a collector in this bench). Tracing adds CPU on the path (BENCHMARKS.md' +
      ' "Tracing": ~+1.5 ms per order), so the traced wait is longer than the untraced rows: read the shares more' +
      ' than the sum. Each stage is a mean over the orders less their fastest and slowest tenth (span starts are' +
      ' whole milliseconds in OpenTelemetry JS, so a median of a sub-millisecond stage would read 0 or 1).',
    '',
    'Each stage runs from the end of the row above (the first from the web taking the request) to the boundary it names.',
    '',
    '| store | service | stage, up to | mean ms | share | orders |',
    '|---|---|---|--:|--:|--:|',
  ];
  for (const report of reports) {
    const sum = report.stages.reduce((total, s) => total + (Number.isNaN(s.ms) ? 0 : s.ms), 0);
    for (const stage of report.stages)
      lines.push(
        Number.isNaN(stage.ms)
          ? `| ${report.store} | ${report.service} | ${stage.to} | – | – | 0 |`
          : `| ${report.store} | ${report.service} | ${stage.to} | ${stage.ms.toFixed(2)} | ${((stage.ms / sum) * 100).toFixed(0)} % | ${stage.orders} |`,
      );
    lines.push(
      `| ${report.store} | ${report.service} | **sum** (traced wait p50 ${report.waitP50.toFixed(2)} ms over ${report.orders} orders) | ${sum.toFixed(2)} | | |`,
    );
  }
  return lines.join('\n');
}
