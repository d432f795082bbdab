/**
 * The signed API's paths, declared once: the router matches `pattern`, the metrics label requests with
 * `/v1` + `template`, and the OpenAPI document keys its paths by `template` ({param} for :param).
 */
export const API_ROUTES = {
  orders: { template: '/orders', pattern: /^\/orders\/?$/ },
  order: { template: '/orders/:orderId', pattern: /^\/orders\/([^/]+)\/?$/, params: ['orderId'] },
  orderBatches: { template: '/order-batches', pattern: /^\/order-batches\/?$/ },
} as const satisfies Record<string, ApiRoute>;

export interface ApiRoute {
  /** The path after `/v1`, with :name for a parameter. */
  template: string;
  /** The path after `/v1` (no query); its capture groups are `params`, in order. */
  pattern: RegExp;
  params?: readonly string[];
}

export type ApiRouteName = keyof typeof API_ROUTES;

/** The route's path as OpenAPI writes it: /orders/{orderId}. */
export const openApiPath = (route: ApiRoute): string => route.template.replace(/:(\w+)/g, '{$1}');

/** The route's pattern for the whole path, `/v1` included, as the metrics see it. */
export const fullPathPattern = (route: ApiRoute): RegExp =>
  new RegExp(`^\\/v1${route.pattern.source.slice(1)}`);
