import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { collectAhead } from './collect-ahead.js';

// Every label takes its value from a closed set, whatever clients send: a request can never add a series.
// Route templates (a path matching none is 'unmatched'), known methods, the status codes the service answers
// (others 'other'), and the Svc-Status values of its catalogue. The web front names its routes and catalogue
// (http/request-labels.ts): this room knows no path of its own.
export interface RequestLabels {
  /** The route label of a path (without the query): the first whose pattern matches. */
  routes: readonly { pattern: RegExp; route: string }[];
  /** The Svc-Status codes a response may carry. */
  svcStatusCodes: readonly number[];
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const STATUS_CODES = new Set(
  [200, 201, 204, 206, 301, 302, 304, 400, 401, 403, 404, 405, 406, 408, 409, 413, 414, 415, 422, 429]
    .concat([431, 500, 502, 503, 504])
    .map(String),
);

/** The route label of `path` among `routes`; 'unmatched' when none matches. */
export function routeOf(routes: RequestLabels['routes'], path: string): string {
  for (const { pattern, route } of routes) if (pattern.test(path)) return route;
  return 'unmatched';
}

/** The HTTP status as a label: one of the known codes, else 'other'. */
export function statusLabelOf(status: number): string {
  const code = String(status);
  return STATUS_CODES.has(code) ? code : 'other';
}

/** The Svc-Status header as a label: comma-joined codes of the catalogue, else 'other' ('' when absent). */
export function svcStatusLabelOf(catalogue: ReadonlySet<string>, svcStatus: string | undefined): string {
  const codes = (svcStatus ?? '').replace(/\s+/g, '');
  if (codes === '') return '';
  return codes.split(',').every((code) => catalogue.has(code)) ? codes : 'other';
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

/** The process's request metrics, labelled from `labels` alone. */
export function createProcessMetrics(labels: RequestLabels): ProcessMetrics {
  const svcCodes = new Set(labels.svcStatusCodes.map(String));
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // Their /proc and heap figures read a little before each scrape is due, not in it (collect-ahead.ts).
  collectAhead(registry.getMetricsAsArray());
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
    const series = seriesOf(
      label,
      routeOf(labels.routes, path),
      statusLabelOf(status),
      svcStatusLabelOf(svcCodes, svcStatus),
    );
    series.count();
    series.time(ms / 1000);
  };
  return { registry, observe };
}
