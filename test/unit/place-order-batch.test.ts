// The batch's flow in its service (services/orders/place-order-batch.ts): the listings read once, each entry
// read and checked in turn, an entry refused for its requestId checked all the same but never placed, one result
// per entry in request order. Fakes for the order check and the store; no entry here gets as far as placing.
import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/logger.js';
import { loopTurns } from '../../src/services/loop-turns.js';
import {
  ORDER_PROBLEMS,
  type CheckedOrder,
  type OrderCheckResult,
} from '../../src/services/orders/order-check.js';
import type { PlaceOrderResult } from '../../src/services/orders/place-order.js';
import { placeOrderBatch, type PlaceOrderBatchDeps } from '../../src/services/orders/place-order-batch.js';

const log = { info: () => undefined, warn: () => undefined } as unknown as Logger;
const refusedFor = (result: PlaceOrderResult) => (result.kind === 'refused' ? result : undefined);

describe('placeOrderBatch', () => {
  it('reads each entry as its turn comes, checks it, and answers each in request order', async () => {
    const calls: string[] = [];
    const reserved: number[][] = [];
    const deps = {
      clock: () => 0,
      orderCheck: {
        async loadCatalog(ids: readonly number[]) {
          calls.push(`catalog ${ids.join(',')}`);
          return { listings: new Map(), vendors: new Map() };
        },
        async check(_clientId: number, body: Record<string, unknown>): Promise<OrderCheckResult> {
          calls.push(`check ${Object.keys(body).join(',')} ${String(body.ccToken)}`);
          if (body.ccToken === 'locked')
            return { kind: 'refused', problems: [ORDER_PROBLEMS.locked], retryAfterS: 5 };
          if (body.ccToken === 'fine') return { kind: 'checked', order: {} as CheckedOrder };
          return { kind: 'refused', problems: [ORDER_PROBLEMS.card] };
        },
      },
      backpressure: {
        async reserve(_clientId: number, items: number[]) {
          reserved.push(items);
          return { admitted: 0, retryAfterS: 0, ofClient: false };
        },
        release: () => undefined,
      },
    } as unknown as PlaceOrderBatchDeps;
    const listings = (...ids: number[]) => ids.map((listingId) => ({ listingId, quantity: 1 }));
    const entries = [
      { requestId: 'r0', ccToken: 'a', listings: listings(7) },
      { requestId: 'r1', ccToken: 'locked' },
      null,
      // Used by entry 1 already; its order is checked all the same.
      { requestId: 'r1', ccToken: 'b', listings: listings(8, 7) },
      // Passes its check, but its requestId is too long: it is not placed.
      { requestId: 'x'.repeat(37), ccToken: 'fine' },
    ];
    const results = await placeOrderBatch(deps, {
      clientId: 1,
      entries,
      requestOf: 'POST\n/v1/order-batches',
      log,
    });
    expect(calls).toEqual([
      'catalog 7,8',
      'check ccToken,listings a',
      'check ccToken locked',
      'check ccToken,listings b',
      'check ccToken fine',
    ]);
    expect(
      results.map(({ requestId, result }) => [requestId, refusedFor(result)?.problems.map((p) => p.message)]),
    ).toEqual([
      ['r0', [ORDER_PROBLEMS.card.message]],
      ['r1', [ORDER_PROBLEMS.locked.message]],
      ['', [ORDER_PROBLEMS.notAnOrder.message]],
      ['r1', [ORDER_PROBLEMS.requestIdTwice(1).message, ORDER_PROBLEMS.card.message]],
      ['x'.repeat(37), ['requestId: must be 1 to 36 characters']],
    ]);
    expect(results.map(({ result }) => refusedFor(result)?.retryAfterS)).toEqual([
      undefined,
      5,
      undefined,
      undefined,
      undefined,
    ]);
    expect(reserved).toEqual([[]]);
  });
});

describe('placeOrderBatch on a loop shared with other requests', () => {
  it('lets other requests run once an entry check has held the loop its budget, by time, not by entry count', async () => {
    let now = 0;
    let index = 0;
    const turns: number[] = [];
    // Each check costs the milliseconds its ccToken names: cheap ones share a turn, an expensive one ends it.
    const costs = ['1', '1', '1', '12', '1', '1', '30', '1', '2', '2', '2', '2', '2', '2'];
    const deps = {
      clock: () => 0,
      orderCheck: {
        loadCatalog: async () => ({ listings: new Map(), vendors: new Map() }),
        async check(_clientId: number, body: Record<string, unknown>): Promise<OrderCheckResult> {
          index = body.n as number;
          now += Number(body.ccToken);
          return { kind: 'refused', problems: [ORDER_PROBLEMS.card] };
        },
      },
      backpressure: {
        reserve: async () => ({ admitted: 0, retryAfterS: 0, ofClient: false }),
        release: () => undefined,
      },
    } as unknown as PlaceOrderBatchDeps;
    const results = await placeOrderBatch(deps, {
      clientId: 1,
      entries: costs.map((ccToken, n) => ({ requestId: `r${n}`, ccToken, n })),
      requestOf: 'POST\n/v1/order-batches',
      log,
      turn: loopTurns(
        10,
        () => now,
        async () => void turns.push(index),
      ),
    });
    expect(results).toHaveLength(costs.length);
    // A turn ends once it has held 10 ms: after entries 0–3 (15 ms), 4–6 (32 ms) and 7–12 (11 ms); 13 is left.
    expect(turns).toEqual([3, 6, 12]);
  });
});
