import type { RedisClient } from '../redis/redis.js';
import type { Metric, Registry } from 'prom-client';
import type { MetricIncrements } from './metric-increments.js';
import type { ScrapeReads } from './scrape-reads.js';

// Cross-process metrics: workers and the clock run in processes that serve no HTTP, so what they count is
// added to Redis hashes under `{QUEUE_PREFIX}:metrics:<name>` (HINCRBY, atomic across processes); any web
// process reads them at scrape time through these objects, which prom-client's Registry renders like its
// own metrics. The values are cluster-wide: every web process shows the same series, so scrape one.

export type Labels = Record<string, string>;

interface MetricValue {
  value: number;
  labels: Labels;
  metricName?: string;
}

/** A label set as a stable hash field: keys sorted, so `{a,b}` and `{b,a}` are one series. */
function encodeLabels(labels: Labels): string {
  return JSON.stringify(
    Object.keys(labels)
      .sort()
      .map((key) => [key, labels[key]]),
  );
}

/** Label sets already encoded, by their keys and values in the caller's order: a job's series, once per process. */
const encoded = new Map<string, string>();
const ENCODED_MAX = 1_000;

function encodeLabelsOnce(labels: Labels): string {
  let seen = '';
  for (const key in labels) seen += `${key}\u0000${labels[key]}\u0000`;
  let field = encoded.get(seen);
  if (field === undefined) {
    field = encodeLabels(labels);
    // Label values come from a closed set (queues, job names, outcomes, statuses); the bound is a safety net.
    if (encoded.size >= ENCODED_MAX) encoded.clear();
    encoded.set(seen, field);
  }
  return field;
}

function decodeLabels(field: string): Labels {
  return Object.fromEntries(JSON.parse(field) as [string, string][]);
}

abstract class SharedMetric {
  abstract readonly type: 'counter' | 'histogram';
  readonly aggregator = 'sum';
  protected readonly key: string;
  private reads: Pick<ScrapeReads, 'hgetall'>;

  constructor(
    redis: RedisClient,
    prefix: string,
    readonly name: string,
    readonly help: string,
  ) {
    this.key = `${prefix}:metrics:${name}`;
    this.reads = redis;
  }

  protected abstract values(hash: Record<string, string>): MetricValue[];

  /** What prom-client's Registry asks of a metric at scrape time; no series while Redis is away (see /readyz). */
  async get() {
    const hash = await this.reads.hgetall(this.key).catch(() => ({}) as Record<string, string>);
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: this.values(hash),
    };
  }

  /** Nothing to reset in this process: the series live in Redis. */
  reset(): void {}

  /**
   * Registers on a prom-client registry, which only needs `name` and `get()` of a metric; `reads` (the scrape's
   * batched reads) read its hash at scrape time instead of a command of its own.
   */
  registerOn(registry: Registry, reads?: ScrapeReads): void {
    if (reads) this.reads = reads;
    registry.registerMetric(this as unknown as Metric);
  }
}

/** A counter whose series are shared by every process of the deployment. */
export class SharedCounter extends SharedMetric {
  readonly type = 'counter';

  /** Adds to `increments`, which the recorder sends to Redis with everything else of its flush. */
  inc(increments: MetricIncrements, labels: Labels, amount = 1): void {
    if (amount !== 0) increments.add(this.key, encodeLabelsOnce(labels), amount);
  }

  protected values(hash: Record<string, string>): MetricValue[] {
    return Object.entries(hash).map(([field, value]) => ({
      labels: decodeLabels(field),
      value: Number(value),
    }));
  }
}

/**
 * A histogram whose observations are shared by every process. Each observation adds 1 to its own bucket
 * only (`b|<le>|<labels>`) and its value to the `s|` sum: two commands. Buckets are made cumulative when read,
 * and the count is the last of them (+Inf), so no `c|` field is written (one left by an older version is ignored).
 */
export class SharedHistogram extends SharedMetric {
  readonly type = 'histogram';

  constructor(
    redis: RedisClient,
    prefix: string,
    name: string,
    help: string,
    readonly buckets: readonly number[],
  ) {
    super(redis, prefix, name, help);
  }

  observe(increments: MetricIncrements, labels: Labels, value: number): void {
    const field = encodeLabelsOnce(labels);
    const bucket = this.buckets.find((le) => value <= le);
    increments.add(this.key, `b|${bucket ?? '+Inf'}|${field}`, 1);
    increments.addFloat(this.key, `s|${field}`, value);
  }

  protected values(hash: Record<string, string>): MetricValue[] {
    const series = new Map<string, { buckets: Map<string, number>; sum: number }>();
    const seriesOf = (field: string) => {
      let entry = series.get(field);
      if (!entry) series.set(field, (entry = { buckets: new Map(), sum: 0 }));
      return entry;
    };
    for (const [key, raw] of Object.entries(hash)) {
      const value = Number(raw);
      if (key.startsWith('b|')) {
        const at = key.indexOf('|', 2);
        seriesOf(key.slice(at + 1)).buckets.set(key.slice(2, at), value);
      } else if (key.startsWith('s|')) seriesOf(key.slice(2)).sum = value;
    }
    const out: MetricValue[] = [];
    for (const [field, { buckets, sum }] of series) {
      const labels = decodeLabels(field);
      let cumulative = 0;
      for (const le of [...this.buckets.map(String), '+Inf']) {
        cumulative += buckets.get(le) ?? 0;
        out.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le }, value: cumulative });
      }
      out.push({ metricName: `${this.name}_sum`, labels, value: sum });
      out.push({ metricName: `${this.name}_count`, labels, value: cumulative });
    }
    return out;
  }
}
