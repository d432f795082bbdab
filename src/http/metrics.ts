import type { IncomingMessage, ServerResponse } from 'node:http';
import { Gauge, Registry } from 'prom-client';
import type { Deps } from '../deps.js';
import { scrapeCadence } from '../metrics/collect-ahead.js';
import { sharedMetrics } from '../metrics/metrics.recorder.js';
import { registerOrderStoreGauges } from '../metrics/order-store.gauges.js';
import { registerProcessHeartbeats } from '../metrics/process-heartbeats.metrics.js';
import { scrapeReads } from '../metrics/scrape-reads.js';
import { ORDER_QUEUE, type CountedState } from '../queue/order.queue.js';
import { sharedInFlight } from '../services/read-cache.js';

const QUEUE_STATES: readonly CountedState[] = ['waiting', 'prioritized', 'active', 'delayed', 'failed'];

/**
 * The deployment-wide series, the same whichever web process is scraped: what workers and the clock recorded
 * in Redis, the queue's depth from BullMQ, order counts from the store, and every process's heartbeat.
 */
export function createDeploymentRegistry(deps: Pick<Deps, 'redis' | 'config' | 'queue' | 'clock'>): Registry {
  const registry = new Registry();
  // Every read of Redis a scrape makes goes in one pipeline, the queue's counts too.
  const reads = scrapeReads(deps.redis);
  for (const metric of Object.values(sharedMetrics(deps.redis, deps.config.REDIS_PREFIX)))
    metric.registerOn(registry, reads);
  new Gauge({
    name: 'bookorders_queue_jobs',
    help: 'Jobs in a BullMQ queue, by state',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const counts = await deps.queue.countsFrom(reads, QUEUE_STATES).catch(() => null);
      if (!counts) return;
      for (const state of QUEUE_STATES) this.set({ queue: ORDER_QUEUE, state }, counts[state] ?? 0);
    },
  });
  registerOrderStoreGauges(reads, deps.config.REDIS_PREFIX, registry);
  // Beside bookorders_order_items_unsettled: how close the deployment is to refusing real orders (5030).
  new Gauge({
    name: 'bookorders_orders_unsettled_limit',
    help: 'MAX_UNSETTLED_ORDERS: with more items of unsettled orders than this, real orders are refused with 5030',
    registers: [registry],
  }).set(deps.config.MAX_UNSETTLED_ORDERS);
  registerProcessHeartbeats(deps.redis, deps.config.REDIS_PREFIX, registry, reads, deps.clock);
  return registry;
}

/** How long before a scrape expected at a steady interval its text is collected (when `reuseMs` is longer). */
const AHEAD_MS = 250;

/**
 * The metrics listener's requests (METRICS_PORT, never the API port): GET /metrics is this process's (or this
 * cluster's) own series followed by the deployment-wide ones; anything else is 404. Concurrent scrapes share one
 * collection, and a text collected less than `reuseMs` ago is answered again, so however many scrape, at once or
 * in a loop, they cost Redis and the event loop one collection per `reuseMs`. A target scraped at a steady
 * interval (Prometheus's) has its text collected 250 ms before each scrape is due, and the scrape answers it
 * as a text collected less than `reuseMs` ago: the scrape waits for no read of Redis or the process. A scrape
 * that comes early, or late by more than `reuseMs`, collects as before.
 */
export function metricsListener(
  processMetrics: () => Promise<string>,
  deployment: Registry,
  reuseMs = 0,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  // A text collected less than `reuseMs` ago is served again: scrapers in a loop cost one collection per period.
  let last: { text: string; at: number } | null = null;
  const collectNow = sharedInFlight(async () => {
    // The deployment's reads first: their one pipeline goes to Redis as this tick ends, and this process's own
    // series are collected (on the next turn of the loop) while Redis answers, not before the pipeline is sent.
    const shared = deployment.metrics();
    const own = new Promise<string>((resolve, reject) =>
      setImmediate(() => processMetrics().then(resolve, reject)),
    );
    const [ownText, sharedText] = await Promise.all([own, shared]);
    const text = `${ownText.trimEnd()}\n\n${sharedText}`;
    last = { text, at: Date.now() };
    return text;
  });
  const collect = async () =>
    last && reuseMs > 0 && Date.now() - last.at < reuseMs ? last.text : collectNow();
  // A failed collection ahead is left for the scrape, which collects again and answers 500 if it fails too.
  const ahead =
    reuseMs > AHEAD_MS
      ? scrapeCadence(() => void collectNow().catch(() => undefined), { leadMs: AHEAD_MS })
      : null;
  return async (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found: GET /metrics\n');
      return;
    }
    const began = performance.now();
    ahead?.scraped();
    const text = await collect().catch((err: unknown) => err as Error);
    if (text instanceof Error) {
      res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end(`metrics: ${text.message}\n`);
      return;
    }
    // The process's own time for this scrape (the collection, or the reuse of a recent text), for whoever
    // measures scrapes from outside: what the service spends, apart from the network and the host's scheduling.
    const serverTiming = `collect;dur=${(performance.now() - began).toFixed(2)}`;
    res.writeHead(200, { 'Content-Type': Registry.PROMETHEUS_CONTENT_TYPE, 'Server-Timing': serverTiming });
    res.end(req.method === 'HEAD' ? undefined : text);
  };
}
