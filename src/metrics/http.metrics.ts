import type { Request, Response } from 'express';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

// Route templates, not paths, so that label values stay few whatever clients send.
const ROUTES: [RegExp, string][] = [
  [/^\/v1\/orders\/?$/, '/v1/orders'],
  [/^\/v1\/orders\/[^/]+\/?$/, '/v1/orders/:orderId'],
  [/^\/v1\/order-batches\/?$/, '/v1/order-batches'],
  [/^\/v1\/openapi\.json$/, '/v1/openapi.json'],
  [/^\/(healthz|readyz|metrics)$/, '/$1'],
  [/^\/admin\/queues(\/|$)/, '/admin/queues'],
];
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export function routeOf(path: string): string {
  for (const [pattern, route] of ROUTES) if (pattern.test(path)) return path.replace(pattern, route);
  return 'unmatched';
}

/** Told of every request once its response is sent, with the time it took in seconds. */
export type RequestObserver = (req: Request, res: Response, seconds: number) => void;

export interface ProcessMetrics {
  /** This process's own series: HTTP requests and prom-client's process_* and nodejs_* metrics. */
  registry: Registry;
  /** Counts and times a request once its response is sent (the app's request context calls it). */
  observe: RequestObserver;
}

export function createProcessMetrics(): ProcessMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route template, HTTP status and Svc-Status codes',
    labelNames: ['method', 'route', 'status_code', 'svc_status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from request to response sent, by method, route template and HTTP status',
    labelNames: ['method', 'route', 'status_code'] as const,
    // Real orders wait up to ORDER_WAIT_MS (10 s) for the worker, so the top buckets matter too.
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30],
    registers: [registry],
  });
  // prom-client hashes label objects on every call; the few label combinations are bound once and reused.
  const bound = new Map<string, { count: () => void; time: (seconds: number) => void }>();
  const seriesOf = (method: string, route: string, statusCode: string, svcStatus: string) => {
    const key = `${method} ${route} ${statusCode} ${svcStatus}`;
    let series = bound.get(key);
    if (!series) {
      const labels = { method, route, status_code: statusCode };
      const counter = requests.labels({ ...labels, svc_status: svcStatus });
      const histogram = duration.labels(labels);
      series = { count: () => counter.inc(), time: (seconds) => histogram.observe(seconds) };
      bound.set(key, series);
    }
    return series;
  };
  const observe: RequestObserver = (req, res, seconds) => {
    const method = METHODS.has(req.method) ? req.method : 'other';
    const svcStatus = String(res.getHeader('Svc-Status') ?? '').replace(/\s+/g, '');
    const series = seriesOf(method, routeOf(pathOf(req.originalUrl)), String(res.statusCode), svcStatus);
    series.count();
    series.time(seconds);
  };
  return { registry, observe };
}

/** The path of a request target, without its query (routers rewrite req.url, never req.originalUrl). */
function pathOf(url: string): string {
  const mark = url.indexOf('?');
  return mark === -1 ? url : url.slice(0, mark);
}
