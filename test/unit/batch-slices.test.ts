import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { loopTurns } from '../../src/services/loop-turns.js';
import type { CheckedOrder } from '../../src/services/orders/order-check.js';
import {
  ITEMS_PER_SLICE,
  acceptBatch,
  slicesOf,
  type BatchOrder,
  type AcceptBatchDeps,
} from '../../src/services/orders/accept-batch.js';
import type { AcceptResult, NewOrder, OrderWithItems } from '../../src/store/port/store.port.js';

const order = (items: number) => ({ items: Array<number>(items).fill(0) });
const itemsOf = (o: { items: unknown[] }) => o.items.length;
const sizes = (orders: { items: unknown[] }[][]) => orders.map((slice) => slice.map(itemsOf));

describe("a batch's real orders accepted in slices", () => {
  it(`holds at most ${ITEMS_PER_SLICE} items a slice, in the batch's order, an order larger than that alone`, () => {
    expect(ITEMS_PER_SLICE).toBe(100);
    expect(slicesOf([], itemsOf)).toEqual([]);
    expect(sizes(slicesOf([order(1), order(2)], itemsOf))).toEqual([[1, 2]]);
    expect(sizes(slicesOf(Array(3).fill(order(50)), itemsOf))).toEqual([[50, 50], [50]]);
    expect(sizes(slicesOf([order(40), order(250), order(60), order(40), order(1)], itemsOf))).toEqual([
      [40],
      [250],
      [60, 40],
      [1],
    ]);
    const many = slicesOf(Array(200).fill(order(250)), itemsOf);
    expect(many).toHaveLength(200);
    expect(many.flat()).toHaveLength(200);
  });
});

describe('the turns of a long piece of work (loopTurns)', () => {
  it('lets the event loop turn once the budget is used, and only then', async () => {
    let now = 0;
    let waits = 0;
    const turn = loopTurns(
      10,
      () => now,
      async () => void waits++,
    );
    for (const at of [0, 4, 9.9]) {
      now = at;
      await turn();
    }
    expect(waits).toBe(0);
    now = 10;
    await turn();
    expect(waits).toBe(1);
    // A new turn began at 10: its budget runs to 20.
    now = 19;
    await turn();
    expect(waits).toBe(1);
    now = 45;
    await turn();
    expect(waits).toBe(2);
  });
});

/** A real order of `items` items of one listing, as the edge checked it. */
function batchOrder(requestId: string, items: number): BatchOrder {
  const checked = {
    draft: {
      dryrun: false,
      domain: 'bookmarket.com',
      shippingMode: 'S',
      shipAddr: {},
      billAddr: {},
      listings: [{ listingId: 1, quantity: items }],
    },
    currency: 'USD',
    card: { cardId: 7 },
    pricing: {
      lines: [
        {
          listingId: 1,
          vendorId: 2,
          title: 'T',
          isbn: '9780000000001',
          quantity: items,
          minDays: 1,
          maxDays: 2,
          items: Array.from({ length: items }, () => ({ costCents: 100, shipcostCents: 0 })),
        },
      ],
    },
  } as unknown as CheckedOrder;
  return { requestId, requestHash: `hash-${requestId}`, checked };
}

/**
 * A store that keeps what it accepts, counting the event loop's turns between its calls (a setImmediate
 * scheduled at each call has run by the next one when a turn came between).
 */
function fakeBatchDeps() {
  const byRequest = new Map<string, OrderWithItems>();
  const calls: { kind: 'accept' | 'read'; items: number; afterTurn: boolean }[] = [];
  let turned = true;
  const call = (kind: 'accept' | 'read', items: number) => {
    calls.push({ kind, items, afterTurn: turned });
    turned = false;
    setImmediate(() => (turned = true));
  };
  let nextId = 1;
  const released: [number, number][] = [];
  const deps: AcceptBatchDeps = {
    clock: () => 1_000,
    queue: { enqueueMany: async () => {} } as never,
    backpressure: {
      reserve: async (_clientId, itemsPerOrder) => ({
        admitted: itemsPerOrder.length,
        retryAfterS: 1,
        ofClient: false,
      }),
      release: (_clientId, reserved, created) => void released.push([reserved, created]),
    },
    store: {
      orders: {
        acceptMany: async (orders: readonly NewOrder[]): Promise<AcceptResult[]> => {
          call(
            'accept',
            orders.reduce((sum, o) => sum + o.items.length, 0),
          );
          return orders.map((o) => {
            const found = byRequest.get(o.requestId);
            if (found) return { kind: 'duplicate', orderId: found.order.orderId };
            const orderId = nextId++;
            const stored = {
              order: {
                orderId,
                createdAt: o.createdAt,
                currency: o.currency,
                taxCents: null,
                taxModel: null,
              },
              items: o.items.map((item, n) => ({
                ...item,
                orderItemId: orderId * 1000 + n,
                orderId,
                status: 1,
                shipcostCents: 0,
                updatedAt: o.createdAt,
                shippingCompany: null,
                trackingId: null,
              })),
            } as unknown as OrderWithItems;
            byRequest.set(o.requestId, stored);
            return { kind: 'created', orderId, stored };
          });
        },
        durable: async () => {},
        getMany: async (orderIds: readonly number[]) => {
          const found = [...byRequest.values()].filter((o) => orderIds.includes(o.order.orderId));
          call(
            'read',
            found.reduce((sum, o) => sum + o.items.length, 0),
          );
          return found;
        },
      } as never,
    },
  };
  return { deps, calls, released };
}

describe('a batch of large orders (acceptBatch)', () => {
  const log = createLogger({ LOG_LEVEL: 'silent', LOG_PRETTY: 'false' }, 'test');
  const orders = [
    ...Array.from({ length: 4 }, (_, i) => batchOrder(`big-${i}`, 250)),
    ...Array.from({ length: 150 }, (_, i) => batchOrder(`small-${i}`, 1)),
  ];

  it('stores it in transactions of one large order or at most 100 items, with a turn of the event loop between', async () => {
    const { deps, calls, released } = fakeBatchDeps();
    const results = await acceptBatch(deps, { clientId: 3, orders, log });
    expect(results.map((r) => r.kind)).toEqual(orders.map(() => 'placed'));
    expect(calls.map((c) => c.items)).toEqual([250, 250, 250, 250, 100, 50]);
    expect(calls.every((c) => c.afterTurn)).toBe(true);
    expect(released).toEqual([[1150, 1150]]);
  });

  it('sent again, reads its orders back in slices as well, with a turn between', async () => {
    const { deps, calls, released } = fakeBatchDeps();
    const first = await acceptBatch(deps, { clientId: 3, orders, log });
    calls.length = 0;
    const again = await acceptBatch(deps, { clientId: 3, orders, log });
    expect(again.map((r) => r.kind === 'placed' && r.duplicate)).toEqual(orders.map(() => true));
    expect(again.map((r) => r.kind === 'placed' && r.order.orderId)).toEqual(
      first.map((r) => r.kind === 'placed' && r.order.orderId),
    );
    const reads = calls.filter((c) => c.kind === 'read');
    expect(reads.map((c) => c.items)).toEqual([250, 250, 250, 250, 100, 50]);
    expect(reads.every((c) => c.afterTurn)).toBe(true);
    expect(released.at(-1)).toEqual([1150, 0]);
  });
});
