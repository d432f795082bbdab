// When placeOrder (services/orders/place-order.ts) tells a client what its acceptance stored: only once the
// store says it is durable (OrderStore.durable), with the job enqueued meanwhile; a synchronous order answered
// with what the worker announced does not wait for the web's own flush, which the worker's covers. Fakes for the
// check, backpressure, the store, the queue and the outcomes; a gate stands for a flush of the log.
import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/logger.js';
import type { CheckedOrder } from '../../src/services/orders/order-check.js';
import {
  placeOrder,
  type PlaceOrderDeps,
  type PlaceOrderResult,
} from '../../src/services/orders/place-order.js';
import type { AcceptResult, OrderWithItems } from '../../src/store/port/store.port.js';

const log = { info: () => undefined, warn: () => undefined } as unknown as Logger;
const ORDER_ID = 41;
const stored = {
  order: {
    orderId: ORDER_ID,
    createdAt: 0,
    currency: 'USD',
    taxCents: null,
    taxModel: null,
    referenceId: null,
  },
  items: [],
} as unknown as OrderWithItems;
const checked = {
  draft: { dryrun: false, listings: [], shipAddr: {}, billAddr: {} },
  currency: 'USD',
  card: { cardId: 1 },
  pricing: { lines: [] },
} as unknown as CheckedOrder;

/** A service whose flush waits until `flush()`; `events` is what it was asked, in order. */
function fakes(options: { accepted?: AcceptResult['kind']; enqueueFails?: boolean; announced?: boolean }) {
  const events: string[] = [];
  let flush = () => {};
  const flushed = new Promise<void>((resolve) => (flush = resolve));
  const deps = {
    clock: () => 0,
    orderWaitMs: 1_000,
    orderCheck: { check: async () => ({ kind: 'checked', order: checked }) },
    backpressure: { reserve: async () => ({ admitted: 1 }), release: () => undefined },
    store: {
      orders: {
        async accept(): Promise<AcceptResult> {
          events.push('accept');
          const kind = options.accepted ?? 'created';
          if (kind === 'created') return { kind, orderId: ORDER_ID, stored };
          return kind === 'duplicate' ? { kind, orderId: ORDER_ID } : { kind };
        },
        async durable() {
          events.push('durable asked');
          await flushed;
          events.push('durable');
        },
        async get() {
          events.push('read');
          return stored;
        },
      },
    },
    queue: {
      async enqueue() {
        events.push('enqueue');
        if (options.enqueueFails) throw new Error('Redis is away');
      },
    },
    outcomes: {
      async wait() {
        events.push('wait');
        return options.announced ? JSON.stringify({ orderId: ORDER_ID, listings: [] }) : undefined;
      },
    },
  } as unknown as PlaceOrderDeps;
  return { deps, events, flush };
}

const place = (deps: PlaceOrderDeps, respondAsync: boolean) =>
  placeOrder(deps, { clientId: 1, requestId: 'r', requestHash: 'h', body: {}, respondAsync, log });

/** Whether `promise` has settled after a few turns of the event loop. */
async function settledSoon(promise: Promise<PlaceOrderResult>): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true));
  for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

describe('placeOrder: told once durable', () => {
  it('answers Prefer: respond-async only once the acceptance is durable, enqueuing the job meanwhile', async () => {
    const { deps, events, flush } = fakes({});
    const answer = place(deps, true);
    expect(await settledSoon(answer)).toBe(false);
    expect(events).toEqual(['accept', 'enqueue', 'durable asked']);
    flush();
    expect(await answer).toMatchObject({ kind: 'placed', duplicate: false, queued: false });
    expect(events.at(-1)).toBe('durable');
  });

  it("answers a synchronous order with the worker's announcement, not waiting for a flush of its own", async () => {
    const { deps, events } = fakes({ announced: true });
    const answer = place(deps, false);
    expect(await settledSoon(answer)).toBe(true);
    expect(await answer).toMatchObject({ kind: 'placed', order: { orderId: ORDER_ID } });
    expect(events).toEqual(['accept', 'enqueue', 'wait']);
  });

  it('answers a synchronous order whose job could not be enqueued only once durable', async () => {
    const { deps, events, flush } = fakes({ enqueueFails: true });
    const answer = place(deps, false);
    expect(await settledSoon(answer)).toBe(false);
    expect(events).toEqual(['accept', 'enqueue', 'durable asked']);
    flush();
    expect(await answer).toMatchObject({ kind: 'placed', queued: false });
  });

  it('reads a synchronous order back when nothing was announced (a read waits for the flush itself)', async () => {
    const { deps, events } = fakes({ announced: false });
    expect(await place(deps, false)).toMatchObject({ kind: 'placed', order: { orderId: ORDER_ID } });
    expect(events).toEqual(['accept', 'enqueue', 'wait', 'read']);
  });

  it('tells of a duplicate or a conflict only once durable', async () => {
    for (const accepted of ['duplicate', 'conflict'] as const) {
      const { deps, events, flush } = fakes({ accepted });
      const answer = place(deps, false);
      expect(await settledSoon(answer)).toBe(false);
      expect(events.at(-1)).toBe('durable asked');
      flush();
      expect((await answer).kind).toBe(accepted === 'conflict' ? 'refused' : 'placed');
      expect(events).toContain('durable');
    }
  });
});
