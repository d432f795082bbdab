// book-order-client: the order service's client for callers (README, "For callers").
export { OrdersClient } from './client.js';
export type {
  CallOptions,
  OrdersClientOptions,
  PlaceOrderOptions,
  PlaceOrdersOptions,
  PlaceOrdersResult,
  RawAnswer,
  RequestOptions,
  WaitForOrderOptions,
} from './client.js';
export { OrderApiError, WebhookVerificationError } from './errors.js';
export { isRetryable, retryAfterMs, retryDelayMs, RETRYABLE_CODES } from './retry.js';
export type { AttemptOutcome, BackoffOptions } from './retry.js';
export { canonicalQuery, signRequest, stringToSign, sha256Hex } from './signing.js';
export type { RequestToSign } from './signing.js';
export { verifyWebhook, webhookSignature } from './webhook.js';
export type { VerifyWebhookOptions, WebhookHeaders } from './webhook.js';
export type * from './types.js';
export type { components, paths, operations } from './api-types.js';
