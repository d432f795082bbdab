import { describe, expect, it } from 'vitest';
import {
  conformsToDocument,
  createResponseChecker,
  defaultDocument,
  type ObservedResponse,
} from '../helpers/openapi-validator.js';

const problemsOf = createResponseChecker(defaultDocument());
const JSON_TYPE = 'application/json; charset=utf-8';

const order = {
  orderId: 42,
  createDate: '2026-11-21T10:00:00.000Z',
  currency: 'USD',
  listings: [
    {
      listingId: 2002,
      title: 'Walden',
      isbn: '9780691096124',
      quantity: 1,
      vendorId: 601,
      minShippingDays: 3,
      maxShippingDays: 7,
      orderItems: [{ orderItemId: 7, cost: 10, shipcost: 3.99, status: 5 }],
    },
  ],
  dryrun: false,
  tax: 1.02,
  taxModel: 'SALES_TAX',
};

const response = (status: number, body: unknown, headers: Record<string, string> = {}): ObservedResponse => ({
  status,
  headers: { 'content-type': JSON_TYPE, 'svc-status': `${status}0`, ...headers },
  body,
});
const failure = (status: number, headers: Record<string, string> = {}) =>
  response(status, { requestId: 'r-1', messages: ['something: went wrong'] }, headers);

describe('the response validator of the integration tests', () => {
  it('passes what the document describes: an order, a search page, failures with their headers', () => {
    expect(problemsOf('GET', '/v1/orders/42', response(200, order, { 'svc-status': '2000' }))).toEqual([]);
    const page = { orders: [order], metadata: { orderResponseSize: 1, next: 43 } };
    expect(problemsOf('GET', '/v1/orders?limit=1', response(200, page, { 'svc-status': '2000' }))).toEqual(
      [],
    );
    expect(problemsOf('POST', '/v1/orders', failure(401, { 'svc-status': '4010, 4017' }))).toEqual([]);
    expect(
      problemsOf('POST', '/v1/orders', failure(429, { 'svc-status': '4293', 'retry-after': '1800' })),
    ).toEqual([]);
    expect(problemsOf('DELETE', '/v1/orders', failure(405, { allow: 'GET, HEAD, POST' }))).toEqual([]);
  });

  it('flags a status code the operation does not list', () => {
    expect(problemsOf('GET', '/v1/orders', failure(409))).toEqual([
      'GET /orders (searchOrders): HTTP 409 is not a documented response',
    ]);
    expect(problemsOf('PUT', '/v1/orders/1', failure(404))).toHaveLength(1);
  });

  it('flags a missing Svc-Status, a code of another class, a 429 without Retry-After', () => {
    const { 'svc-status': _, ...withoutStatus } = failure(422).headers;
    expect(problemsOf('GET', '/v1/orders', { ...failure(422), headers: withoutStatus })).toEqual([
      'GET /orders (searchOrders) 422: header Svc-Status is missing',
    ]);
    expect(problemsOf('GET', '/v1/orders', failure(422, { 'svc-status': '4000' }))[0]).toMatch(/Svc-Status/);
    expect(problemsOf('POST', '/v1/orders', failure(429))).toEqual([
      'POST /orders (placeOrder) 429: header Retry-After is missing',
    ]);
  });

  it('flags a body that does not match: an undocumented field, a third decimal, a bad date, no messages', () => {
    const item = order.listings[0]!.orderItems[0]!;
    const withItem = (changes: object) => ({
      ...order,
      listings: [{ ...order.listings[0], orderItems: [{ ...item, ...changes }] }],
    });
    const ok = (body: unknown) => response(200, body, { 'svc-status': '2000' });
    expect(problemsOf('GET', '/v1/orders/42', ok({ ...order, discount: 1 }))[0]).toMatch(
      /body \/ must NOT have additional properties/,
    );
    expect(problemsOf('GET', '/v1/orders/42', ok(withItem({ cost: 10.005 })))[0]).toMatch(
      /orderItems\/0\/cost must be multiple of 0.01/,
    );
    expect(problemsOf('GET', '/v1/orders/42', ok(withItem({ itemUpdateDate: '2026-11-21' })))).toHaveLength(
      1,
    );
    expect(problemsOf('GET', '/v1/orders/42', response(404, { requestId: '', messages: [] }))[0]).toMatch(
      /messages must NOT have fewer than 1 items/,
    );
    expect(
      problemsOf('GET', '/v1/orders/42', { ...failure(404), headers: { 'svc-status': '4041' } }),
    ).toEqual(['GET /orders/{orderId} (getOrder) 404: Content-Type is missing, not JSON']);
  });

  it('leaves paths outside the document alone and fails the request through supertest’s expect', () => {
    expect(problemsOf('GET', '/v1/orders/1/items', failure(404))).toEqual([]);
    expect(() => conformsToDocument('GET', '/v1/orders')(failure(418))).toThrow(
      /does not match the OpenAPI document:\nGET \/orders \(searchOrders\): HTTP 418/,
    );
  });
});
