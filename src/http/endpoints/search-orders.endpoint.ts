import type { RequestHandler } from 'express';
import type { Deps } from '../../deps.js';
import { searchOrders } from '../../services/search-orders.js';
import { ApiError } from '../errors.js';
import { responses } from '../openapi-responses.js';
import {
  ListingSummarySchema,
  OrderItemSummarySchema,
  OrderResponseSchema,
  OrderSearchResponseSchema,
} from '../order-response.schema.js';
import { perClientSlots } from '../batch-slots.js';
import { readCost } from '../order-cost.js';
import { orderSearchParameters, parseOrderSearchQuery } from '../order-search.schema.js';
import { chargeOwed } from '../rate-limit.js';
import { rawQueryOf } from '../request-input.js';
import { authOf, sendOk } from '../respond.js';
import { SvcStatus } from '../status-codes.js';
import { requestIdParam, signed, type Endpoint } from './endpoint.js';

/** GET /v1/orders: the client's orders matching a query, a page at a time (docs/api.md#search). */
export const searchOrdersEndpoint: Endpoint = {
  method: 'GET',
  path: '/orders',
  operation: {
    operationId: 'searchOrders',
    summary: "Search the client's orders",
    description:
      'Orders of the signing client matching the query, sorted as asked, a page at a time (cursor).',
    tags: ['orders'],
    ...signed,
    parameters: [requestIdParam, ...orderSearchParameters()],
    responses: responses({ 2000: 'orders retrieved' }, 'OrderSearchResponse'),
  },
  schemas: () => [
    OrderItemSummarySchema,
    ListingSummarySchema,
    OrderResponseSchema,
    OrderSearchResponseSchema,
  ],
  handlers: (deps) => [
    perClientSlots(deps.config.SEARCH_CONCURRENCY_PER_CLIENT, 'searches'),
    getOrders(deps),
  ],
};

/**
 * GET /v1/orders: the search; runs after the auth middleware. Its page is charged by its items once read, before
 * it is sent (readCost: the request paid one on arrival, the rest is owed).
 */
export function getOrders(deps: Deps): RequestHandler {
  return async (req, res) => {
    const { clientId } = authOf(res);
    const query = parseOrderSearchQuery(rawQueryOf(req));
    if (!query.success) throw new ApiError(SvcStatus.INVALID, query.messages);
    const outcome = await searchOrders(deps, clientId, query.data);
    if (outcome.kind === 'bad-cursor') throw new ApiError(SvcStatus.INVALID, outcome.message);
    await chargeOwed(res, readCost(outcome.items) - 1);
    sendOk(res, SvcStatus.RETRIEVED, outcome.body);
  };
}
