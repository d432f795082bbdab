// Batches for the tests of POST /v1/order-batches: entries built from the fixtures' order body, sent signed.
import type { OrderRequest } from '../../src/services/orders/order-request.schema.js';
import { orderBody } from './fixtures.js';
import { signed, type Credentials, type SignOptions, type TestService } from './test-service.js';

export interface BatchResult {
  requestId: string;
  status: number[];
  order: { orderId: number; listings: { orderItems: { status: number }[] }[] } | null;
  messages?: string[];
}

/** One entry of a batch: a valid order of the fixtures with its requestId; override any field. */
export function entry(
  requestId: string,
  ccToken: string,
  overrides: Partial<OrderRequest> & Record<string, unknown> = {},
) {
  return { requestId, ...orderBody(ccToken, overrides) };
}

/** POST /v1/order-batches with `{ orders }` (or any body given as text), signed, checked against the document. */
export function postBatch(
  service: TestService,
  creds: Credentials,
  orders: unknown,
  options: SignOptions = {},
) {
  const body = typeof orders === 'string' ? orders : { orders };
  return signed(service.app, creds, 'POST', '/v1/order-batches', body, options);
}

export const resultsOf = (res: { body: { results: BatchResult[] } }): BatchResult[] => res.body.results;

export const statusesOf = (res: { body: { results: BatchResult[] } }): number[][] =>
  resultsOf(res).map((r) => r.status);

/** The item statuses of a result's order, in order. */
export const itemStatuses = (result: BatchResult): number[] =>
  result.order?.listings.flatMap((l) => l.orderItems.map((i) => i.status)) ?? [];
