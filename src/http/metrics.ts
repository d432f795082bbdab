import type { RequestHandler } from 'express';
import { Gauge, Registry } from 'prom-client';
import type { Deps } from '../deps.js';
import { sharedMetrics } from '../metrics/metrics.recorder.js';
import { registerOrderStoreGauges } from '../metrics/order-store.metrics.js';
import { registerProcessHeartbeats } from '../metrics/process-heartbeat.js';
import { ORDER_QUEUE } from '../queue/order.queue.js';
import { sharedInFlight } from '../services/read-cache.js';

const QUEUE_STATES = ['waiting', 'prioritized', 'active', 'delayed', 'failed'] as const;

/**
 * The deployment-wide series, the same whichever web process is scraped: what workers and the clock recorded
 * in Redis, the queue's depth from BullMQ, order counts from the store, and every process's heartbeat.
 */
export function createDeploymentRegistry(deps: Pick<Deps, 'redis' | 'config' | 'queue' | 'store'>): Registry {
  const registry = new Registry();
  for (const metric of Object.values(sharedMetrics(deps.redis, deps.config.REDIS_PREFIX)))
    metric.registerOn(registry);
  new Gauge({
    name: 'bookorders_queue_jobs',
    help: 'Jobs in a BullMQ queue, by state',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const counts = await deps.queue.counts(QUEUE_STATES).catch(() => null);
      if (!counts) return;
      for (const state of QUEUE_STATES) this.set({ queue: ORDER_QUEUE, state }, counts[state] ?? 0);
    },
  });
  registerOrderStoreGauges(deps.store, registry);
  // Beside bookorders_orders_unsettled: how close the deployment is to refusing real orders (5030).
  new Gauge({
    name: 'bookorders_orders_unsettled_limit',
    help: 'MAX_UNSETTLED_ORDERS: with more unsettled orders than this, real orders are refused with 5030',
    registers: [registry],
  }).set(deps.config.MAX_UNSETTLED_ORDERS);
  registerProcessHeartbeats(deps.redis, deps.config.REDIS_PREFIX, registry);
  return registry;
}

/**
 * GET /metrics: this process's (or this cluster's) own series followed by the deployment-wide ones. Concurrent
 * scrapes share one collection, so however many arrive at once they cost the store, Redis and the event loop
 * what one does.
 */
export function metricsRoute(processMetrics: () => Promise<string>, deployment: Registry): RequestHandler {
  const collect = sharedInFlight(async () => {
    const [own, shared] = await Promise.all([processMetrics(), deployment.metrics()]);
    return `${own.trimEnd()}\n\n${shared}`;
  });
  return async (_req, res) => {
    const text = await collect();
    res.set('Content-Type', Registry.PROMETHEUS_CONTENT_TYPE).send(text);
  };
}
