import type { RequestHandler } from 'express';
import type { Deps } from '../../deps.js';
import { getClientOrder } from '../../services/search-orders.js';
import { ApiError } from '../errors.js';
import { responses } from '../openapi-responses.js';
import {
  ListingSummarySchema,
  OrderItemSummarySchema,
  OrderResponseSchema,
} from '../order-response.schema.js';
import { readCost } from '../order-cost.js';
import { unexpectedParams } from '../order-search.schema.js';
import { chargeOwed } from '../rate-limit.js';
import { rawQueryOf } from '../request-input.js';
import { authOf, sendOk } from '../respond.js';
import { SvcStatus } from '../status-codes.js';
import { requestIdParam, signed, type Endpoint } from './endpoint.js';

/** GET /v1/orders/{orderId}: one order of the client, 4041 when it is not one of its own. */
export const getOrderEndpoint: Endpoint = {
  method: 'GET',
  path: '/orders/:orderId',
  operation: {
    operationId: 'getOrder',
    summary: 'One order of the client',
    description: 'The order with its items and their statuses; 4041 when it is not one of the client.',
    tags: ['orders'],
    ...signed,
    parameters: [
      requestIdParam,
      {
        name: 'orderId',
        in: 'path',
        required: true,
        description: 'The orderId returned when the order was placed',
        schema: { type: 'integer', minimum: 1 },
      },
    ],
    responses: responses({ 2000: 'order retrieved' }, 'OrderResponse', ['NotFound']),
  },
  schemas: () => [OrderItemSummarySchema, ListingSummarySchema, OrderResponseSchema],
  handlers: (deps) => [getOrder(deps)],
};

/**
 * GET /v1/orders/{orderId}; runs after the auth middleware. The order is charged by its items once read, before
 * it is sent (readCost: the request paid one on arrival, the rest is owed).
 */
export function getOrder(deps: Deps): RequestHandler {
  return async (req, res) => {
    const { clientId } = authOf(res);
    const unexpected = unexpectedParams(rawQueryOf(req));
    if (unexpected.length > 0) throw new ApiError(SvcStatus.INVALID, unexpected);
    const { orderId: sent } = req.params;
    const text = typeof sent === 'string' ? sent : '';
    const orderId = /^\d+$/.test(text) ? Number(text) : 0;
    // 0 is a dry run's id and never stored; other clients' orders are reported exactly like absent ones.
    const found =
      Number.isSafeInteger(orderId) && orderId > 0 ? await getClientOrder(deps, clientId, orderId) : null;
    if (!found) throw new ApiError(SvcStatus.ORDER_NOT_FOUND, `orderId: no order ${text}`);
    await chargeOwed(res, readCost(found.items) - 1);
    sendOk(res, SvcStatus.RETRIEVED, found.order);
  };
}
