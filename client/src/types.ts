// Named types of requests and answers, taken from the generated api-types.ts (the service's OpenAPI document).
import type { components, operations } from './api-types.js';

type Schemas = components['schemas'];

export type Address = Schemas['Address'];
export type RequestedListing = Schemas['RequestedListing'];
/** The body of `POST /v1/orders`. */
export type OrderRequest = Schemas['OrderRequest'];
/** An order as the service answers it: placed, dry-run, fetched or found. */
export type OrderResponse = Schemas['OrderResponse'];
export type OrderItemSummary = Schemas['OrderItemSummary'];
export type ListingSummary = Schemas['ListingSummary'];
export type OrderSearchResponse = Schemas['OrderSearchResponse'];
export type ErrorResponse = Schemas['ErrorResponse'];
/** One entry of `placeOrders`: an order plus the requestId that makes it safe to send again. */
export type OrderBatchEntry = Schemas['OrderBatchEntry'];
export type OrderBatchResult = Schemas['OrderBatchResult'];

type SearchQuery = NonNullable<operations['searchOrders']['parameters']['query']>;

/** Criteria of `searchOrders` (`GET /v1/orders`); `next` is followed by the client itself. */
export type OrderSearchParams = {
  [K in Exclude<keyof SearchQuery, 'next' | 'orderId' | 'orderItemId' | 'vendorId'>]?: SearchQuery[K];
} & {
  vendorId?: string | number;
  orderId?: readonly (string | number)[];
  orderItemId?: readonly (string | number)[];
};

/** A webhook delivery's body (docs/api.md#webhooks); `sequence` increases by one per change of the order. */
export type WebhookEvent = Schemas['OrderEvent'];
