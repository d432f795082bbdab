import type { RequestHandler } from 'express';
import { MAX_BATCH_ORDERS, orderBatchRequestSchemas } from '../../services/orders/order-batch.schema.js';
import { ORDER_PROBLEMS } from '../../services/orders/order-check.js';
import { orderRequestSchemas } from '../../services/orders/order-request.schema.js';
import {
  placeOrderBatch,
  readBatch,
  type BatchEntryResult,
  type PlaceOrderBatchDeps,
} from '../../services/orders/place-order-batch.js';
import { jsonObjectBody, type JsonLimits } from '../json-body.js';
import { json, responses } from '../openapi-responses.js';
import { batchResultOf, refusalError } from '../order-answers.js';
import {
  OrderBatchResponseSchema,
  OrderBatchResultSchema,
  orderResponseSchemas,
  type OrderBatchResult,
} from '../order-response.schema.js';
import { chargeCost, giveBack } from '../rate-limit.js';
import { perClientSlots } from '../batch-slots.js';
import { ORDER_COST_RULE, orderCost } from '../order-cost.js';
import { authOf, streamOk } from '../respond.js';
import { SvcStatus } from '../status-codes.js';
import { requestIdParam, signed, type Endpoint } from './endpoint.js';

/** POST /v1/order-batches: up to 500 orders, each with its own requestId and result (docs/api.md#batches). */
export const placeOrderBatchEndpoint: Endpoint = {
  method: 'POST',
  path: '/order-batches',
  operation: {
    operationId: 'placeOrderBatch',
    summary: 'Place or dry-run up to 500 orders at once, each with its own requestId and result',
    description:
      'Real orders are answered at once with items QUEUED (as with Prefer: respond-async). A result ' +
      'holds the Svc-Status codes the order would get alone; the batch fails whole only when it is malformed.',
    tags: ['batches'],
    ...signed,
    parameters: [requestIdParam],
    requestBody: { required: true, content: json('OrderBatchRequest') },
    responses: responses({ 2004: 'batch answered, one result per order' }, 'OrderBatchResponse', [], {
      'Retry-After': {
        description:
          'Set when an order was refused for a while (5030, 4293): seconds until a retry can succeed',
        required: false,
        schema: { type: 'integer', minimum: 1 },
      },
    }),
  },
  schemas: (domains) => [
    ...orderRequestSchemas(domains),
    ...orderResponseSchemas(),
    ...Object.values(orderBatchRequestSchemas(domains)),
    OrderBatchResultSchema,
    OrderBatchResponseSchema,
  ],
  handlers: (deps) => [
    perClientSlots(deps.config.BATCH_CONCURRENCY_PER_CLIENT, 'batches'),
    postOrderBatch(deps),
  ],
  chargedByBody: true,
};

/**
 * A batch is two levels deeper than an order and holds up to 500 of them; a few listings each make ~40 values
 * an order. More than 500 entries is the batch's own 4002, found before the body is parsed.
 */
const BATCH_JSON_LIMITS: JsonLimits = {
  maxDepth: 16,
  maxValues: 200_000,
  refuse: ({ member, entries }) =>
    member === 'orders' && entries > MAX_BATCH_ORDERS
      ? refusalError({ kind: 'refused', problems: [ORDER_PROBLEMS.tooManyOrders] })
      : undefined,
};

/** The rate-limit cost of a batch's entries (each at least 1, whatever it holds): see orderCost. */
export function batchCost(entries: readonly unknown[]): number {
  let cost = 0;
  for (const entry of entries) cost += orderCost(entry);
  return cost;
}

/**
 * POST /v1/order-batches: the body's bytes, its cost (taken whole once the body is read; a body that cannot be read,
 * or a batch refused a slot, costs one: chargedByBody) and the answers' stream here; the batch in placeOrderBatch.
 */
export function postOrderBatch(deps: PlaceOrderBatchDeps): RequestHandler {
  return async (req, res) => {
    const batch = readBatch(jsonObjectBody(req, BATCH_JSON_LIMITS));
    if (batch.kind === 'refused') throw refusalError(batch);
    const cost = batchCost(batch.entries);
    await chargeCost(res, cost, `this batch costs ${cost} requests (${ORDER_COST_RULE})`);
    const { clientId } = authOf(res);
    // No variable of their own for the answers: a suspended handler keeps its variables, so they would stay
    // alive through the stream; `outcomes` alone holds the results, and lets each go once written (answersOf).
    const outcomes: (BatchEntryResult | undefined)[] = await placeOrderBatch(deps, {
      clientId,
      entries: batch.entries,
      requestOf: `${req.method}\n${req.path}`,
      log: req.log,
    });
    // Orders refused by backpressure stored nothing: their cost is given back but one token, what any request costs.
    let unspent = 0;
    outcomes.forEach((o, index) => {
      if (o?.result.kind === 'refused' && o.result.problems.some((p) => p.kind === 'busy'))
        unspent += orderCost(batch.entries[index]);
    });
    await giveBack(res, Math.min(unspent, cost - 1));
    const retryAfter = Math.max(
      0,
      ...outcomes.map((o) => (o!.result.kind === 'refused' && o!.result.retryAfterS) || 0),
    );
    if (retryAfter > 0) res.set('Retry-After', String(retryAfter));
    await streamOk(res, SvcStatus.BATCH_ANSWERED, 'results', answersOf(outcomes));
  };
}

/**
 * The entries' answers in request order, each dropped from `outcomes` as it is taken to be written: a batch's
 * answers (several MB for 500 orders of 250 items) are not all kept alive while a slow reader takes them.
 */
function* answersOf(outcomes: (BatchEntryResult | undefined)[]): Generator<OrderBatchResult> {
  for (let n = 0; n < outcomes.length; n++) {
    const outcome = outcomes[n]!;
    outcomes[n] = undefined;
    yield batchResultOf(outcome);
  }
}
