import type { Request, RequestHandler } from 'express';
import { sha256Hex } from '../../auth/signature.js';
import { ORDER_PROBLEMS } from '../../services/orders/order-check.js';
import { MAX_LISTINGS, orderRequestSchemas } from '../../services/orders/order-request.schema.js';
import { placeOrder, type PlaceOrderDeps } from '../../services/orders/place-order.js';
import { bindLogContext } from '../request-context.js';
import { jsonObjectBody, type JsonLimits } from '../json-body.js';
import { json, responses } from '../openapi-responses.js';
import { ORDER_COST_RULE, orderCost } from '../order-cost.js';
import { chargeCost, giveBack } from '../rate-limit.js';
import { placedCode, refusalError } from '../order-answers.js';
import { orderResponseSchemas } from '../order-response.schema.js';
import { authOf, bodySha256Of, sendOk } from '../respond.js';
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
  schemas: (domains) => [...orderRequestSchemas(domains), ...orderResponseSchemas()],
  handlers: (deps) => [postOrder({ ...deps, orderWaitMs: deps.config.ORDER_WAIT_MS })],
  chargedByBody: true,
};

/**
 * An OrderRequest is 3 levels deep and holds at most a few hundred values: a body far beyond that is refused
 * before it is parsed, with 4002 when it is the listings that overflow.
 */
const ORDER_JSON_LIMITS: JsonLimits = {
  maxDepth: 16,
  maxValues: 10_000,
  refuse: ({ limit, member, entries }) =>
    limit === 'values' && member === 'listings' && entries > MAX_LISTINGS
      ? refusalError({ kind: 'refused', problems: [ORDER_PROBLEMS.tooManyListings] })
      : undefined,
};

/** `Prefer: respond-async` (RFC 7240) asks for the answer without waiting for the worker. */
function prefersAsync(req: Request): boolean {
  return (req.get('prefer') ?? '')
    .split(',')
    .some((p) => p.trim().toLowerCase().split(';')[0] === 'respond-async');
}

/**
 * POST /v1/orders: the body's bytes and cost here, the cost taken whole once the body is read (a body that cannot
 * be read costs one, taken before its error is answered: chargedByBody); reading, checking and placing it in
 * placeOrder.
 */
export function postOrder(deps: PlaceOrderDeps): RequestHandler {
  return async (req, res) => {
    const body = jsonObjectBody(req, ORDER_JSON_LIMITS);
    const cost = orderCost(body);
    await chargeCost(res, cost, `this order costs ${cost} requests (${ORDER_COST_RULE})`);
    const respondAsync = prefersAsync(req);
    const { clientId, requestId } = authOf(res);
    const result = await placeOrder(deps, {
      clientId,
      requestId,
      requestHash: sha256Hex(`${req.method}\n${req.path}\n${bodySha256Of(res)}`),
      body,
      respondAsync,
      log: req.log,
    });
    if (result.kind === 'refused') {
      // Refused by backpressure, nothing stored: its cost is given back but one token, what any request costs.
      if (result.problems.some((p) => p.kind === 'busy')) await giveBack(res, cost - 1);
      throw refusalError(result);
    }
    if (result.kind === 'placed') {
      // On the request's log line: the order it placed, whether it was placed before, whether it waits.
      bindLogContext(req, {
        orderId: result.order.orderId,
        duplicate: result.duplicate,
        queued: result.queued,
      });
      if (respondAsync) res.set('Preference-Applied', 'respond-async');
    }
    sendOk(res, placedCode(result), result.order);
  };
}
