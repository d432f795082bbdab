import { describe, expect, it } from 'vitest';
import {
  OrderSearchQueryParams,
  OrderSearchQuerySchema,
  orderSearchParameters,
  parseInstant,
  parseOrderSearchQuery,
  unexpectedParams,
} from '../../src/http/order-search.schema.js';

const ms = (iso: string) => Date.parse(iso);

const messagesOf = (query: string): string[] => {
  const parsed = parseOrderSearchQuery(query);
  return parsed.success ? [] : parsed.messages;
};

describe('parseInstant', () => {
  it('reads a bare date as midnight UTC and a date-time without offset as UTC', () => {
    expect(parseInstant('2026-11-21')).toBe(ms('2026-11-21T00:00:00.000Z'));
    expect(parseInstant('2026-11-21T10:00')).toBe(ms('2026-11-21T10:00:00.000Z'));
    expect(parseInstant('2026-11-21T10:00:05')).toBe(ms('2026-11-21T10:00:05.000Z'));
    expect(parseInstant('2026-11-21T10:00:05.123Z')).toBe(ms('2026-11-21T10:00:05.123Z'));
  });

  it('applies offsets in every ISO 8601 form', () => {
    expect(parseInstant('2026-11-21T12:00:00+02:00')).toBe(ms('2026-11-21T10:00:00.000Z'));
    expect(parseInstant('2026-11-21T04:30:00-0530')).toBe(ms('2026-11-21T10:00:00.000Z'));
    expect(parseInstant('2026-11-21T11:00:00+01')).toBe(ms('2026-11-21T10:00:00.000Z'));
  });

  it('rounds digits below the millisecond up, so a bound keeps excluding the millisecond before it', () => {
    expect(parseInstant('2026-11-21T10:00:00.1')).toBe(ms('2026-11-21T10:00:00.100Z'));
    expect(parseInstant('2026-11-21T10:00:00.123000')).toBe(ms('2026-11-21T10:00:00.123Z'));
    expect(parseInstant('2026-11-21T10:00:00.1231Z')).toBe(ms('2026-11-21T10:00:00.124Z'));
    expect(parseInstant('2026-11-21T10:00:59.9999Z')).toBe(ms('2026-11-21T10:01:00.000Z'));
  });

  it('refuses impossible calendar dates and times, and anything not ISO 8601', () => {
    expect(parseInstant('2024-02-29')).toBe(ms('2024-02-29T00:00:00.000Z'));
    for (const bad of [
      '2025-02-29',
      '2026-04-31',
      '2026-13-01',
      '2026-00-10',
      '2026-11-21T24:00:00Z',
      '2026-11-21T10:60',
      '2026-11-21T10:00:00+24:00',
      '2026-11-21 10:00:00',
      '21/11/2026',
      '1763719200000',
      'yesterday',
      '',
    ]) {
      expect(parseInstant(bad), bad).toBeNull();
    }
  });
});

describe('parseOrderSearchQuery', () => {
  it('defaults to ascending, 20 per page and no other criteria', () => {
    expect(parseOrderSearchQuery('')).toEqual({ success: true, data: { sortOrder: 'ascending', limit: 20 } });
  });

  it('reads every parameter, repeated ids as lists, dates as epoch ms', () => {
    const parsed = parseOrderSearchQuery(
      'dateStart=2026-01-01&dateEnd=2026-03-01T00%3A00%3A00Z&itemUpdateDateStart=2026-02-01' +
        '&itemUpdateDateEnd=2026-02-02&vendorId=501&referenceId=PO-7_a&orderId=3&orderId=1&orderItemId=9' +
        '&sortOrder=descending&limit=100&next=123456',
    );
    expect(parsed).toEqual({
      success: true,
      data: {
        dateStart: ms('2026-01-01T00:00:00Z'),
        dateEnd: ms('2026-03-01T00:00:00Z'),
        itemUpdateDateStart: ms('2026-02-01T00:00:00Z'),
        itemUpdateDateEnd: ms('2026-02-02T00:00:00Z'),
        vendorId: 501,
        referenceId: 'PO-7_a',
        orderId: [3, 1],
        orderItemId: [9],
        sortOrder: 'descending',
        limit: 100,
        next: 123456,
      },
    });
  });

  it('allows a span of exactly 90 days and refuses one millisecond more', () => {
    expect(messagesOf('dateStart=2026-01-01&dateEnd=2026-04-01')).toEqual([]);
    expect(messagesOf('dateStart=2026-01-01&dateEnd=2026-04-01T00:00:00.001Z')).toEqual([
      'dateEnd: must be at most 90 days after dateStart',
    ]);
  });

  it('allows an empty window but not one that ends before it starts', () => {
    expect(messagesOf('dateStart=2026-01-01&dateEnd=2026-01-01')).toEqual([]);
    expect(messagesOf('dateStart=2026-01-02&dateEnd=2026-01-01')).toEqual([
      'dateStart: must not be after dateEnd',
    ]);
    expect(messagesOf('itemUpdateDateStart=2026-01-02&itemUpdateDateEnd=2026-01-01')).toEqual([
      'itemUpdateDateStart: must not be after itemUpdateDateEnd',
    ]);
  });

  it('puts no span limit on item update dates', () => {
    expect(messagesOf('itemUpdateDateStart=2025-01-01&itemUpdateDateEnd=2026-06-01')).toEqual([]);
  });

  it('names each bad value', () => {
    expect(messagesOf('limit=0')).toEqual(['limit: must be an integer from 1 to 100']);
    expect(messagesOf('limit=101')).toEqual(['limit: must be an integer from 1 to 100']);
    expect(messagesOf('limit=2.5')).toEqual(['limit: must be an integer from 1 to 100']);
    expect(messagesOf('limit=')).toEqual(['limit: must be an integer from 1 to 100']);
    expect(messagesOf('sortOrder=asc')).toEqual(['sortOrder: must be ascending or descending']);
    expect(messagesOf('vendorId=harbour')).toEqual(['vendorId: must be an integer']);
    expect(messagesOf('referenceId=a%20b')).toEqual(['referenceId: must be 1 to 64 letters, digits, - or _']);
    expect(messagesOf(`referenceId=${'a'.repeat(65)}`)).toEqual([
      'referenceId: must be 1 to 64 letters, digits, - or _',
    ]);
    expect(messagesOf('orderId=1&orderId=x&orderId=1e3')).toEqual([
      'orderId[1]: must be an integer',
      'orderId[2]: must be an integer',
    ]);
    expect(messagesOf('orderItemId=9007199254740993')).toEqual(['orderItemId[0]: must be an integer']);
    expect(messagesOf('next=abc')).toEqual(['next: must be the metadata.next of a previous response']);
    expect(messagesOf('next=0')).toEqual(['next: must be the metadata.next of a previous response']);
    expect(messagesOf('dateStart=tomorrow')).toEqual([
      'dateStart: must be an ISO 8601 date or date-time, e.g. 2026-11-21 or 2026-11-21T10:00:00.123Z',
    ]);
  });

  it('hints at %2B when an unencoded + in an offset arrived as a space', () => {
    expect(messagesOf('dateEnd=2026-11-21T10:00:00+02:00')[0]).toMatch(
      /^dateEnd: .*send a \+ in the offset as %2B/,
    );
  });

  it('refuses unknown names, each once, and single-valued names given twice', () => {
    expect(messagesOf('pageSize=5&DateStart=2026-01-01&pageSize=6&__proto__=1')).toEqual([
      'pageSize: unknown query parameter',
      'DateStart: unknown query parameter',
      '__proto__: unknown query parameter',
    ]);
    expect(messagesOf('limit=5&limit=5')).toEqual(['limit: given more than once; give it once']);
  });

  it('reports every problem of a request at once', () => {
    expect(
      messagesOf(
        'dateStart=2026-03-01&dateEnd=2026-01-01&limit=500&orderId=x&colour=red&sortOrder=up&sortOrder=down',
      ),
    ).toEqual([
      'orderId[0]: must be an integer',
      'sortOrder: given more than once; give it once',
      'limit: must be an integer from 1 to 100',
      'colour: unknown query parameter',
      'dateStart: must not be after dateEnd',
    ]);
  });
});

describe('unexpectedParams', () => {
  it('names each parameter of a query on a path that takes none', () => {
    expect(unexpectedParams('')).toEqual([]);
    expect(unexpectedParams('a=1&b=2&a=3')).toEqual([
      'a: unknown query parameter',
      'b: unknown query parameter',
    ]);
  });
});

describe('the documented parameters', () => {
  it('are exactly those the validator accepts', () => {
    expect(Object.keys(OrderSearchQueryParams.shape)).toEqual(Object.keys(OrderSearchQuerySchema.shape));
  });

  it('become OpenAPI query parameters, ids as repeated arrays', () => {
    const parameters = orderSearchParameters();
    expect(parameters.map((p) => p.name)).toEqual(Object.keys(OrderSearchQueryParams.shape));
    expect(parameters.find((p) => p.name === 'orderId')).toMatchObject({
      in: 'query',
      required: false,
      schema: { type: 'array', items: { type: 'string' } },
    });
    expect(parameters.find((p) => p.name === 'limit')).toMatchObject({
      schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
    });
  });
});
