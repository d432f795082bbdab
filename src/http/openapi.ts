import { z } from 'zod';
import { API_ROUTES, openApiPath } from './api-routes.js';
import { MAX_REQUEST_ID_LENGTH } from './auth.js';
import { AddressSchema, RequestedListingSchema, orderRequestSchema } from './order-request.schema.js';
import {
  ErrorResponseSchema,
  ListingSummarySchema,
  OrderItemSummarySchema,
  OrderResponseSchema,
  OrderSearchResponseSchema,
} from './order-response.schema.js';
import { failureResponses, json, responses } from './openapi-responses.js';
import { OrderEventSchema } from './order-event.schema.js';
import {
  OrderBatchResponseSchema,
  OrderBatchResultSchema,
  orderBatchRequestSchemas,
} from './order-batch.schema.js';
import { orderSearchParameters } from './order-search.schema.js';

/**
 * Every schema of the document as a named component with plain `$ref`s between them. Each zod schema carries
 * its component name as `.meta({ id })`; one named elsewhere but missing here would land in zod's `__shared`
 * pseudo-schema, which no OpenAPI tool resolves, so that fails here at once.
 */
function componentSchemas(domains: readonly string[]): Record<string, object> {
  const named = z.registry<{ id: string }>();
  for (const schema of [
    AddressSchema,
    RequestedListingSchema,
    orderRequestSchema(domains),
    OrderItemSummarySchema,
    ListingSummarySchema,
    OrderResponseSchema,
    OrderSearchResponseSchema,
    ErrorResponseSchema,
    ...Object.values(orderBatchRequestSchemas(domains)),
    OrderBatchResultSchema,
    OrderBatchResponseSchema,
    OrderEventSchema,
  ]) {
    const id = schema.meta()?.id;
    if (typeof id !== 'string') throw new Error('an OpenAPI component schema needs .meta({ id })');
    named.add(schema, { id });
  }
  const { schemas } = z.toJSONSchema(named, { uri: (id) => `#/components/schemas/${id}`, io: 'input' });
  if ('__shared' in schemas) throw new Error(`unnamed shared schemas: ${Object.keys(schemas.__shared!)}`);
  // A component is a subschema of the document: no $id (zod's would hold a fragment) and no dialect of its own.
  return Object.fromEntries(
    Object.entries(schemas).map(([id, { $id: _id, $schema: _dialect, ...schema }]) => [id, schema]),
  );
}

const signed = { security: [{ SvcAccessKey: [], SvcDate: [], SvcSignature: [] }] };
const requestIdParam = { $ref: '#/components/parameters/SvcRequestId' };

const webhookHeader = (name: string, description: string) => ({
  name,
  in: 'header',
  required: true,
  description,
  schema: { type: 'string' },
});

const apiKey = (name: string, description: string) => ({ type: 'apiKey', in: 'header', name, description });

/** The OpenAPI 3.1 document, generated from the zod schemas that validate requests. */
export function openApiDocument(domains: readonly string[]) {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Order Purchasing Service',
      version: '1',
      description: 'Signed JSON API of the book marketplace: place orders, search and read them.',
      license: { name: 'MIT', identifier: 'MIT' },
      contact: { name: 'Book marketplace API operators' },
    },
    servers: [{ url: '/v1' }],
    tags: [
      { name: 'orders', description: 'Place, verify, search and read the orders of the signing client' },
      { name: 'batches', description: 'Place or verify many orders in one request' },
      { name: 'webhooks', description: 'What the service posts to the endpoints an operator registers' },
    ],
    paths: {
      [openApiPath(API_ROUTES.orders)]: {
        post: {
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
        get: {
          operationId: 'searchOrders',
          summary: "Search the client's orders",
          description:
            'Orders of the signing client matching the query, sorted as asked, a page at a time (cursor).',
          tags: ['orders'],
          ...signed,
          parameters: [requestIdParam, ...orderSearchParameters()],
          responses: responses({ 2000: 'orders retrieved' }, 'OrderSearchResponse'),
        },
      },
      [openApiPath(API_ROUTES.orderBatches)]: {
        post: {
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
      },
      [openApiPath(API_ROUTES.order)]: {
        get: {
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
      },
    },
    webhooks: {
      orderUpdated: {
        post: {
          operationId: 'orderUpdated',
          summary: "A change of an order's items, posted to each webhook of its client",
          description:
            'Sent after every change a GET of the order would show (settlement, shipping, reconciliation), at ' +
            'least once and in no set order; retried with backoff until a 2xx answer (docs/api.md#webhooks).',
          tags: ['webhooks'],
          parameters: [
            webhookHeader('Svc-Event-Id', 'The eventId of the body: the same on every retry of this event'),
            webhookHeader('Svc-Date', 'ISO 8601 UTC time of this attempt; reject one far from your clock'),
          ],
          security: [{ SvcWebhookSignature: [] }],
          requestBody: { required: true, content: json('OrderEvent') },
          responses: {
            '200': { description: 'Any 2xx answer within 10 s delivers the event' },
            default: { description: 'Anything else, or no answer in 10 s: the event is sent again later' },
          },
        },
      },
    },
    components: {
      schemas: componentSchemas(domains),
      responses: failureResponses(),
      parameters: {
        SvcRequestId: {
          name: 'Svc-RequestId',
          in: 'header',
          required: true,
          description: 'Unique per request of an access key (a GUID is recommended); signed',
          schema: { type: 'string', minLength: 1, maxLength: MAX_REQUEST_ID_LENGTH },
        },
      },
      securitySchemes: {
        SvcAccessKey: apiKey('Svc-Access-Key', 'The access key of the client'),
        SvcDate: apiKey('Svc-Date', 'ISO 8601 UTC time of sending, within 300 s of the server clock'),
        SvcSignature: apiKey(
          'Svc-Signature',
          'Lowercase hex HMAC-SHA256 of the request under the secret key (docs/api.md#signing)',
        ),
        SvcWebhookSignature: apiKey(
          'Svc-Signature',
          'On a webhook delivery: lowercase hex HMAC-SHA256, under the webhook secret, of Svc-Date, ' +
            'Svc-Event-Id and the hex SHA-256 of the body bytes, joined by newlines (docs/api.md#webhooks)',
        ),
      },
    },
  };
}
