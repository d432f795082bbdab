import { z } from 'zod';
import { MAX_REQUEST_ID_LENGTH } from './auth.js';
import { orderRequestSchema } from './order-request.schema.js';
import { OrderResponseSchema } from './order-response.schema.js';

/** docs/api.md#batches: a batch holds 1..500 orders; otherwise it fails whole with 4002. */
export const MAX_BATCH_ORDERS = 500;

const ordersCount = {
  min: 'must have at least one order',
  max: `must have at most ${MAX_BATCH_ORDERS} orders`,
};

/**
 * The root of a batch as the service checks it first: its entries are checked one by one afterwards, each with
 * an answer of its own, so here they are anything.
 */
export const orderBatchRootSchema = z.strictObject({
  orders: z.array(z.unknown()).min(1, ordersCount.min).max(MAX_BATCH_ORDERS, ordersCount.max),
});

/** An entry's idempotency key: what Svc-RequestId is to a single order. */
export const entryRequestIdSchema = z
  .string()
  .min(1, `must be 1 to ${MAX_REQUEST_ID_LENGTH} characters`)
  .max(MAX_REQUEST_ID_LENGTH, `must be 1 to ${MAX_REQUEST_ID_LENGTH} characters`)
  .meta({ description: 'Plays the part of Svc-RequestId for this order alone; unique in the batch' });

/** The batch body as the OpenAPI document describes it: each entry is an OrderRequest with its requestId. */
export function orderBatchRequestSchemas(domains: readonly string[]) {
  const entry = orderRequestSchema(domains)
    .extend({ requestId: entryRequestIdSchema })
    .meta({ id: 'OrderBatchEntry', description: 'An OrderRequest with the requestId of this order' });
  const request = z
    .strictObject({ orders: z.array(entry).min(1).max(MAX_BATCH_ORDERS) })
    .meta({ id: 'OrderBatchRequest' });
  return { entry, request };
}

export const OrderBatchResultSchema = z
  .strictObject({
    requestId: z.string().describe('The entry’s requestId as sent; "" when it sent none that is text'),
    status: z
      .array(z.number().int().meta({ minimum: 1000, maximum: 5999 }))
      .min(1)
      .describe('The Svc-Status codes this order would get alone, ascending'),
    order: OrderResponseSchema.nullable().describe('The order (priced for a dry run); null when it failed'),
    messages: z
      .array(z.string())
      .min(1)
      .optional()
      .describe('Present when the order failed: one readable line per problem'),
  })
  .meta({ id: 'OrderBatchResult' });

export const OrderBatchResponseSchema = z
  .strictObject({
    results: z.array(OrderBatchResultSchema).describe('One result per order, in the order of the request'),
  })
  .meta({ id: 'OrderBatchResponse' });

export type OrderBatchResult = z.output<typeof OrderBatchResultSchema>;
