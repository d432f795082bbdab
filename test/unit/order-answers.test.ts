import { describe, expect, it } from 'vitest';
import { batchResultOf, placedCode, refusalError } from '../../src/http/order-answers.js';
import { ORDER_PROBLEMS, type OrderProblem } from '../../src/services/orders/order-check.js';

// The edge's one table from the order check's problem kinds to Svc-Status codes (docs/api.md#status-codes).
describe('the answers to an order (http/order-answers.ts)', () => {
  it('gives every problem its code, in the order found, each code once, and its message as worded', () => {
    const error = refusalError({
      kind: 'refused',
      problems: [
        ORDER_PROBLEMS.tooManyItems,
        ORDER_PROBLEMS.unknownListing(1, 99),
        ORDER_PROBLEMS.requestIdTwice(0),
        ORDER_PROBLEMS.card,
      ],
    });
    expect(error.codes).toEqual([4002, 4220, 4001]);
    expect(error.messages).toEqual([
      'listings: must have at most 250 items in all',
      'listings[1].listingId: listing 99 does not exist',
      'requestId: appears more than once in the batch (first at orders[0])',
      'ccToken: not an active card of this client',
    ]);
    expect(error.headers).toEqual({});
    expect(error.httpStatus).toBe(400);
  });

  it('maps the kinds that stand alone, with Retry-After when waiting can make the order pass', () => {
    const alone = (problem: OrderProblem, retryAfterS?: number) =>
      refusalError({ kind: 'refused', problems: [problem], ...(retryAfterS ? { retryAfterS } : {}) });
    expect(alone(ORDER_PROBLEMS.locked, 1800)).toMatchObject({
      codes: [4293],
      headers: { 'Retry-After': '1800' },
    });
    expect(alone(ORDER_PROBLEMS.busy(true), 2)).toMatchObject({
      codes: [5030],
      headers: { 'Retry-After': '2' },
    });
    expect(alone(ORDER_PROBLEMS.conflict('Svc-RequestId')).codes).toEqual([4090]);
    expect(alone(ORDER_PROBLEMS.notAnOrder).codes).toEqual([4000]);
    expect(alone(ORDER_PROBLEMS.tooManyOrders).codes).toEqual([4002]);
  });

  it('answers a placed order 2010, one met again while it waits 2003, a dry run 2002', () => {
    const order = {} as never;
    expect(placedCode({ kind: 'placed', duplicate: false, queued: true, order })).toBe(2010);
    expect(placedCode({ kind: 'placed', duplicate: true, queued: false, order })).toBe(2010);
    expect(placedCode({ kind: 'placed', duplicate: true, queued: true, order })).toBe(2003);
    expect(placedCode({ kind: 'dry-run', order })).toBe(2002);
  });

  it("writes a refused batch entry's codes ascending, with its messages", () => {
    const result = batchResultOf({
      requestId: 'r1',
      result: {
        kind: 'refused',
        problems: [ORDER_PROBLEMS.requestIdTwice(0), ORDER_PROBLEMS.locked],
        retryAfterS: 5,
      },
    });
    expect(result).toEqual({
      requestId: 'r1',
      status: [4220, 4293],
      order: null,
      messages: [ORDER_PROBLEMS.requestIdTwice(0).message, ORDER_PROBLEMS.locked.message],
    });
  });
});
