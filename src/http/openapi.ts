import { z } from 'zod';
import { MAX_REQUEST_ID_LENGTH } from '../services/orders/order-request.schema.js';
import { openApiPath, type Endpoint, type Method, type Operation } from './endpoints/endpoint.js';
import { ENDPOINTS } from './endpoints/index.js';
import { ErrorResponseSchema } from './order-response.schema.js';
import { failureResponses, json } from './openapi-responses.js';
import { OrderEventSchema } from './order-event.schema.js';

/**
 * Every schema of the document as a named component with plain `$ref`s between them. Each zod schema carries
 * its component name as `.meta({ id })`; one named elsewhere but missing here would land in zod's `__shared`
 * pseudo-schema, which no OpenAPI tool resolves, so that fails here at once.
 */
function componentSchemas(
  endpoints: readonly Endpoint[],
  domains: readonly string[],
): Record<string, object> {
  const named = z.registry<{ id: string }>();
  const ids = new Set<string>();
  // The endpoints' schemas (those they share named by each), then the document's own: failures and webhooks.
  for (const schema of [
    ...endpoints.flatMap((e) => e.schemas(domains)),
    ErrorResponseSchema,
    OrderEventSchema,
  ]) {
    const id = schema.meta()?.id;
    if (typeof id !== 'string') throw new Error('an OpenAPI component schema needs .meta({ id })');
    if (ids.has(id)) continue;
    ids.add(id);
    named.add(schema, { id });
  }
  const { schemas } = z.toJSONSchema(named, { uri: (id) => `#/components/schemas/${id}`, io: 'input' });
  if ('__shared' in schemas) throw new Error(`unnamed shared schemas: ${Object.keys(schemas.__shared!)}`);
  // A component is a subschema of the document: no $id (zod's would hold a fragment) and no dialect of its own.
  return Object.fromEntries(
    Object.entries(schemas).map(([id, { $id: _id, $schema: _dialect, ...schema }]) => [id, schema]),
  );
}

/** The endpoints' operations, by OpenAPI path and method. */
function pathsOf(endpoints: readonly Endpoint[]) {
  const paths: Record<string, Partial<Record<Lowercase<Method>, Operation>>> = {};
  for (const { path, method, operation } of endpoints)
    (paths[openApiPath(path)] ??= {})[method.toLowerCase() as Lowercase<Method>] = structuredClone(operation);
  return paths;
}

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
    paths: pathsOf(ENDPOINTS),
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
      schemas: componentSchemas(ENDPOINTS, domains),
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
