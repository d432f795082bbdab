import SwaggerParser from '@apidevtools/swagger-parser';
import { describe, expect, it } from 'vitest';
import { orderRequestSchema } from '../../src/services/orders/order-request.schema.js';
import { orderBody } from '../helpers/fixtures.js';
import { compileDocument, defaultDocument, defaultDomains } from '../helpers/openapi-validator.js';

const doc = defaultDocument();
type Json = Record<string, unknown>;

/** Every value of the document with its JSON pointer. */
function* walk(value: unknown, pointer = ''): Generator<[string, Json]> {
  if (value === null || typeof value !== 'object') return;
  yield [pointer, value as Json];
  for (const [key, child] of Object.entries(value)) yield* walk(child, `${pointer}/${key}`);
}

const at = (pointer: string): unknown =>
  pointer
    .slice(2)
    .split('/')
    .reduce<unknown>((node, key) => (node as Json | undefined)?.[key], doc);

describe('GET /v1/openapi.json, the document', () => {
  it('is valid OpenAPI 3.1 for @apidevtools/swagger-parser, every reference resolved', async () => {
    const api = await SwaggerParser.validate(structuredClone(doc) as never);
    expect(api).toMatchObject({ openapi: '3.1.0' });
  });

  it('would be refused with a dangling reference like the former __shared one', async () => {
    const broken = structuredClone(doc) as unknown as { components: { schemas: Record<string, Json> } };
    const properties = broken.components.schemas.OrderRequest!.properties as Json;
    properties.shipAddr = { $ref: '#/components/schemas/__shared#/$defs/Address' };
    await expect(SwaggerParser.validate(broken as never)).rejects.toThrow(/__shared/);
  });

  it('names every schema as a component and refers to them by plain local references', () => {
    const schemas = Object.keys((doc.components as { schemas: Json }).schemas);
    expect(schemas).toEqual(
      expect.arrayContaining([
        'Address',
        'RequestedListing',
        'OrderRequest',
        'ListingSummary',
        'OrderItemSummary',
        'OrderResponse',
        'OrderSearchResponse',
        'ErrorResponse',
        'OrderBatchEntry',
        'OrderBatchRequest',
        'OrderBatchResult',
        'OrderBatchResponse',
      ]),
    );
    const refs = [...walk(doc)].flatMap(([, node]) => (typeof node.$ref === 'string' ? [node.$ref] : []));
    expect(refs.length).toBeGreaterThan(10);
    for (const ref of refs) {
      expect(ref).toMatch(/^#\/components\/(schemas|responses|parameters)\/[A-Za-z]+$/);
      expect(at(ref), ref).toBeDefined();
    }
    expect([...walk(doc)].filter(([, node]) => '$id' in node || '$schema' in node)).toEqual([]);
  });

  it('gives each operation an id, the signing headers and every failure with ErrorResponse and Svc-Status', () => {
    const operations = Object.values(doc.paths).flatMap((item) => Object.values(item));
    expect(operations.map((op) => op.operationId).sort()).toEqual([
      'getOrder',
      'placeOrder',
      'placeOrderBatch',
      'searchOrders',
    ]);
    for (const op of operations as unknown as Json[]) {
      expect(op.security).toEqual([{ SvcAccessKey: [], SvcDate: [], SvcSignature: [] }]);
      expect(op.parameters).toContainEqual({ $ref: '#/components/parameters/SvcRequestId' });
      const responses = op.responses as Record<string, { $ref?: string }>;
      for (const status of [
        '200',
        '400',
        '401',
        '405',
        '406',
        '408',
        '413',
        '415',
        '422',
        '429',
        '431',
        '500',
        '503',
      ])
        expect(responses, `${op.operationId} ${status}`).toHaveProperty(status);
      for (const [status, ref] of Object.entries(responses).filter(([status]) => status !== '200')) {
        const response = at(ref.$ref!) as { content: Json; headers: Record<string, Json> };
        expect(response.content).toEqual({
          'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } },
        });
        expect(response.headers['Svc-Status']).toMatchObject({ required: true });
        if (status === '429') expect(response.headers['Retry-After']).toMatchObject({ required: true });
      }
    }
    const schemes = (doc.components as { securitySchemes: Record<string, Json> }).securitySchemes;
    expect(Object.entries(schemes).map(([id, s]) => [id, s.in, s.name])).toEqual([
      ['SvcAccessKey', 'header', 'Svc-Access-Key'],
      ['SvcDate', 'header', 'Svc-Date'],
      ['SvcSignature', 'header', 'Svc-Signature'],
      ['SvcWebhookSignature', 'header', 'Svc-Signature'],
    ]);
  });

  it('describes the webhook delivery: its signed headers and the event body, whose order is an OrderResponse', () => {
    const post = at('#/webhooks/orderUpdated/post') as Json;
    expect(post.security).toEqual([{ SvcWebhookSignature: [] }]);
    expect((post.parameters as Json[]).map((p) => p.name)).toEqual(['Svc-Event-Id', 'Svc-Date']);
    expect(post.requestBody).toMatchObject({
      content: { 'application/json': { schema: { $ref: '#/components/schemas/OrderEvent' } } },
    });
    const validate = compileDocument(doc).schema('#/components/schemas/OrderEvent');
    const event = {
      eventId: 'evt_0a1b',
      type: 'order.updated',
      createDate: '2026-11-25T10:00:00.000Z',
      sequence: 1,
    };
    const order = { orderId: 1, createDate: '2026-11-25T10:00:00.000Z', items: [] };
    expect(validate({ ...event, order: { ...order } })).toBe(false);
    expect(validate({ ...event, type: 'order.created' })).toBe(false);
  });

  it('describes and tags each operation with a tag the document declares', () => {
    const declared = ((doc as unknown as Json).tags as { name: string; description: string }[]).map((t) => {
      expect(t.description).toBeTruthy();
      return t.name;
    });
    for (const op of Object.values(doc.paths).flatMap((item) => Object.values(item)) as unknown as Json[]) {
      expect(op.description).toBeTruthy();
      expect((op.tags as string[]).length).toBeGreaterThan(0);
      for (const tag of op.tags as string[]) expect(declared).toContain(tag);
    }
  });

  it('says what the zod refinements check: money positive to the cent, country three capitals', () => {
    const money = { type: 'number', exclusiveMinimum: 0, multipleOf: 0.01 };
    expect(at('#/components/schemas/OrderRequest/properties/totalMaxPrice')).toMatchObject(money);
    expect(at('#/components/schemas/RequestedListing/properties/maxPrice')).toMatchObject(money);
    expect(at('#/components/schemas/Address/properties/country')).toMatchObject({ pattern: '^[A-Z]{3}$' });
  });

  describe('accepts and refuses order bodies as the service does', () => {
    const validate = compileDocument(doc).schema('#/components/schemas/OrderRequest');
    const zod = orderRequestSchema(defaultDomains());
    const body = (overrides: Json) => orderBody('tok_1', overrides);
    const cases: [string, Json, boolean][] = [
      ['a plain order', {}, true],
      [
        'prices to the cent',
        { totalMaxPrice: 40.1, listings: [{ listingId: 1, quantity: 2, maxPrice: 0.07 }] },
        true,
      ],
      [
        'a maxPrice with three decimals',
        { listings: [{ listingId: 1, quantity: 1, maxPrice: 12.345 }] },
        false,
      ],
      ['a totalMaxPrice of 0', { totalMaxPrice: 0 }, false],
      ['a lower-case country', { shipAddr: { ...orderBody('t').shipAddr, country: 'usa' } }, false],
      ['251 copies of one listing', { listings: [{ listingId: 1, quantity: 251 }] }, false],
      ['an unknown field', { coupon: 'FREE' }, false],
      ['a domain outside the seven', { domain: 'example.com' }, false],
    ];
    it.each(cases)('%s', (_name, overrides, valid) => {
      expect(zod.safeParse(body(overrides)).success).toBe(valid);
      expect(validate(body(overrides))).toBe(valid);
    });
  });
});
