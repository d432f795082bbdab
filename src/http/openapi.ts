import { z } from 'zod';
import { orderRequestSchema } from './order-request.schema.js';
import { orderSearchParameters } from './order-search.schema.js';
import {
  ErrorResponseSchema,
  OrderResponseSchema,
  OrderSearchResponseSchema,
} from './order-response.schema.js';

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });
const json = (id: string) => ({ 'application/json': { schema: ref(id) } });

const signedHeaders = ['Svc-RequestId', 'Svc-Access-Key', 'Svc-Date', 'Svc-Signature'].map((name) => ({
  name,
  in: 'header',
  required: true,
  schema: { type: 'string' },
}));

const failure = {
  description: 'Failure: Svc-Status holds every code that applies (CONTRACT.md section 3)',
  headers: { 'Svc-Status': { schema: { type: 'string' } } },
  content: json('ErrorResponse'),
};

/** The OpenAPI 3.1 document, generated from the zod schemas that validate requests. */
export function openApiDocument(domains: readonly string[]) {
  const schemas = new z.core.$ZodRegistry<{ id: string }>();
  schemas.add(orderRequestSchema(domains), { id: 'OrderRequest' });
  for (const [id, schema] of Object.entries({
    OrderResponse: OrderResponseSchema,
    OrderSearchResponse: OrderSearchResponseSchema,
    ErrorResponse: ErrorResponseSchema,
  })) {
    schemas.add(schema, { id });
  }
  const components = z.toJSONSchema(schemas, {
    uri: (id) => `#/components/schemas/${id}`,
    io: 'input',
    unrepresentable: 'any',
  });
  return {
    openapi: '3.1.0',
    info: { title: 'Order Purchasing Service', version: '1' },
    servers: [{ url: '/v1' }],
    paths: {
      '/orders': {
        post: {
          summary: 'Place an order, or verify it with dryrun',
          parameters: signedHeaders,
          requestBody: { required: true, content: json('OrderRequest') },
          responses: {
            200: {
              description: '2010 created, 2003 duplicate in progress, 2002 dry run',
              content: json('OrderResponse'),
            },
            '4XX': failure,
          },
        },
        get: {
          summary: "Search the client's orders",
          parameters: [...signedHeaders, ...orderSearchParameters()],
          responses: {
            200: { description: '2000 retrieved', content: json('OrderSearchResponse') },
            '4XX': failure,
          },
        },
      },
      '/orders/{orderId}': {
        get: {
          summary: 'One order of the client',
          parameters: [
            ...signedHeaders,
            { name: 'orderId', in: 'path', required: true, schema: { type: 'integer', minimum: 1 } },
          ],
          responses: {
            200: { description: '2000 retrieved', content: json('OrderResponse') },
            '4XX': failure,
          },
        },
      },
    },
    components: { schemas: components.schemas },
  };
}
