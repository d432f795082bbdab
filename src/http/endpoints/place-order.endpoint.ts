import type { Request, RequestHandler } from 'express';
import { sha256Hex } from '../../auth/signature.js';
import type { OrderIntake } from '../../services/order-intake.js';
import type { PlaceOrderDeps } from '../../services/place-order.js';
import { submitOrder } from '../../services/submit-order.js';
import { ApiError } from '../errors.js';
import { bindLogContext } from '../request-context.js';
import { jsonObjectBody } from '../json-body.js';
import { json, responses } from '../openapi-responses.js';
import { ORDER_COST_RULE, orderCost } from '../order-cost.js';
import { chargeMore, giveBack } from '../rate-limit.js';
import { backpressureError, placedCode } from '../order-answers.js';
import { createOrderRequestReader, ORDER_JSON_LIMITS, refusalError } from '../order-request.check.js';
import { AddressSchema, RequestedListingSchema, orderRequestSchema } from '../order-request.schema.js';
import {
  ListingSummarySchema,
  OrderItemSummarySchema,
  OrderResponseSchema,
} from '../order-response.schema.js';
import { authOf, bodySha256Of, sendOk } from '../respond.js';
import { SvcStatus } from '../status-codes.js';
import { requestIdParam, signed, type Endpoint } from './endpoint.js';

/** POST /v1/orders: place an order, or price it with dryrun (docs/api.md#endpoints). */
export const placeOrderEndpoint: Endpoint = {
  method: 'POST',
  path: '/orders',
  operation: {
    operationId: 'placeOrder',
    summary: 'Place an order, or verify it with dryrun',
    description:
      'Prices, checks and reserves the listings of one order, then charges the card; with dryrun, only ' +
      'checks it. The same Svc-RequestId and body again answer the same order (2003 while in progress).',
    tags: ['orders'],
    ...signed,
    parameters: [
      requestIdParam,
      {
        name: 'Prefer',
        in: 'header',
        required: false,
        description: 'respond-async: answer at once, with items still QUEUED',
        schema: { type: 'string' },
      },
    ],
    requestBody: { required: true, content: json('OrderRequest') },
    responses: responses(
      { 2002: 'dry run succeeded', 2003: 'duplicate of an order still in progress', 2010: 'created' },
      'OrderResponse',
      ['Conflict'],
      { 'Preference-Applied': { schema: { type: 'string', enum: ['respond-async'] } } },
    ),
  },
  schemas: (domains) => [
    AddressSchema,
    RequestedListingSchema,
    orderRequestSchema(domains),
    OrderItemSummarySchema,
    ListingSummarySchema,
    OrderResponseSchema,
  ],
  handlers: (deps) => [postOrder({ ...deps, orderWaitMs: deps.config.ORDER_WAIT_MS })],
};

/** `Prefer: respond-async` (RFC 7240) asks for the answer without waiting for the worker. */
function prefersAsync(req: Request): boolean {
  return (req.get('prefer') ?? '')
    .split(',')
    .some((p) => p.trim().toLowerCase().split(';')[0] === 'respond-async');
}

/** POST /v1/orders */
export function postOrder(deps: PlaceOrderDeps & { intake: OrderIntake }): RequestHandler {
  const readOrderRequest = createOrderRequestReader(deps.intake.domains.keys());
  return async (req, res) => {
    const body = jsonObjectBody(req, ORDER_JSON_LIMITS);
    const cost = orderCost(body);
    await chargeMore(res, cost - 1, `this order costs ${cost} requests (${ORDER_COST_RULE})`);
    const respondAsync = prefersAsync(req);
    const { clientId, requestId } = authOf(res);
    const { request, problems } = readOrderRequest(body);
    const result = await submitOrder(deps, {
      clientId,
      requestId,
      requestHash: sha256Hex(`${req.method}\n${req.path}\n${bodySha256Of(res)}`),
      request,
      respondAsync,
      log: req.log,
    });
    switch (result.kind) {
      case 'locked':
      case 'refused':
        throw refusalError(problems, result);
      case 'dry-run':
        return sendOk(res, SvcStatus.DRY_RUN_OK, result.order);
      case 'conflict':
        throw new ApiError(
          SvcStatus.REQUEST_ID_CONFLICT,
          'Svc-RequestId: already used by this access key for a different request',
        );
      case 'busy':
        // Refused by backpressure, nothing stored: its cost is given back, the one request paid on arrival kept.
        await giveBack(res, cost - 1);
        throw backpressureError(result);
      case 'placed': {
        // On the request's log line: the order it placed, whether it was placed before, whether it waits.
        bindLogContext(req, {
          orderId: result.order.orderId,
          duplicate: result.duplicate,
          queued: result.queued,
        });
        if (respondAsync) res.set('Preference-Applied', 'respond-async');
        return sendOk(res, placedCode(result), result.order);
      }
    }
  };
}
