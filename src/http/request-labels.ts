import type { RequestLabels } from '../metrics/http.metrics.js';
import { pathPattern } from './endpoints/endpoint.js';
import { ENDPOINTS } from './endpoints/index.js';
import { SvcStatus } from './status-codes.js';

/**
 * What the request metrics may name (metrics/http.metrics.ts): the route templates of every path the web
 * process answers, the endpoints' first, and the Svc-Status catalogue. Handed to `createProcessMetrics`.
 */
export const REQUEST_LABELS: RequestLabels = {
  routes: [
    ...[...new Set(ENDPOINTS.map((e) => e.path))].map((path) => ({
      pattern: new RegExp(`^\\/v1${pathPattern(path).pattern.source.slice(1)}`),
      route: `/v1${path}`,
    })),
    { pattern: /^\/v1\/openapi\.json$/, route: '/v1/openapi.json' },
    { pattern: /^\/healthz$/, route: '/healthz' },
    { pattern: /^\/readyz$/, route: '/readyz' },
    { pattern: /^\/metrics$/, route: '/metrics' },
    // The whole dashboard is one route.
    { pattern: /^\/admin\/queues(\/|$)/, route: '/admin/queues' },
  ],
  svcStatusCodes: Object.values(SvcStatus),
};
