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

/** What the request context knows of a request once its response is sent (its access line, whole). */
export interface AnsweredRequest {
  method: string;
  /** The full path as sent, without the query. */
  path: string;
  status: number;
  svcStatus: string | undefined;
  ms: number;
}

/** Told of every request once its response is sent. */
export type RequestObserver = (answered: AnsweredRequest) => void;

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
  const observe: RequestObserver = ({ method, path, status, svcStatus, ms }) => {
    const label = METHODS.has(method) ? method : 'other';
    const series = seriesOf(label, routeOf(path), String(status), (svcStatus ?? '').replace(/\s+/g, ''));
    series.count();
    series.time(ms / 1000);
  };
  return { registry, observe };
}
