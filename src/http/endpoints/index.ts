import type { Endpoint } from './endpoint.js';
import { getOrderEndpoint } from './get-order.endpoint.js';
import { placeOrderBatchEndpoint } from './place-order-batch.endpoint.js';
import { placeOrderEndpoint } from './place-order.endpoint.js';
import { searchOrdersEndpoint } from './search-orders.endpoint.js';

/**
 * Every way into the signed API, in the order the OpenAPI document lists them: the router (app.ts), the document
 * (openapi.ts) and the request metrics' route labels (request-labels.ts) read this list and nothing else. An
 * endpoint is its module (`NAME.endpoint.ts`) and one line here.
 */
export const ENDPOINTS: readonly Endpoint[] = [
  placeOrderEndpoint,
  searchOrdersEndpoint,
  placeOrderBatchEndpoint,
  getOrderEndpoint,
];
