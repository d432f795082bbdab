import { z } from 'zod';
import { MAX_REQUEST_ID_LENGTH, orderRequestSchema } from './order-request.schema.js';

/** docs/api.md#batches: a batch holds 1..500 orders; otherwise it fails whole (an 'orders' problem). */
export const MAX_BATCH_ORDERS = 500;

const ordersCount = {
  min: 'must have at least one order',
  max: `must have at most ${MAX_BATCH_ORDERS} orders`,
};

/**
 * The root of a batch as it is read first: its entries are checked one by one afterwards, each with
 * an answer of its own, so here they are anything.
 */
export const orderBatchRootSchema = z.strictObject({
  orders: z.array(z.unknown()).min(1, ordersCount.min).max(MAX_BATCH_ORDERS, ordersCount.max),
});

/** The 'orders' problems of a batch: no orders, or too many. */
export const isOrdersCountProblem = (issue: { path: PropertyKey[]; code: string }): boolean =>
  issue.path.length === 1 &&
  issue.path[0] === 'orders' &&
  (issue.code === 'too_small' || issue.code === 'too_big');

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
