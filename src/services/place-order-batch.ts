import { ItemStatus } from '../domain/item-status.js';
import type { Logger } from '../logger.js';
import type { OrderQueue } from '../queue/order.queue.js';
import type { AcceptResult, NewOrder, OrderWithItems } from '../store/port/store.port.js';
import type { CheckedOrder } from './order-intake.js';
import { toDryRunResponse, toOrderResponse } from './order-view.js';
import { newOrder, type PlaceOrderDeps, type PlaceOrderResult } from './place-order.js';

export type PlaceOrderBatchDeps = Pick<PlaceOrderDeps, 'store' | 'queue' | 'clock' | 'backpressure'>;

/** One order of a batch that passed the edge's checks, with its own idempotency key and request hash. */
export interface BatchOrder {
  requestId: string;
  requestHash: string;
  checked: CheckedOrder;
}

/**
 * A batch of checked orders (docs/api.md#batches): dry runs priced; real orders admitted by backpressure in
 * request order, accepted in slices of a few hundred items (a store transaction each), enqueued in one round
 * trip and answered at once, as with Prefer: respond-async. One result per order, in the same order, as `placeOrder` would give it.
 */
export async function placeOrderBatch(
  deps: PlaceOrderBatchDeps,
  input: { clientId: number; orders: readonly BatchOrder[]; log: Logger },
): Promise<PlaceOrderResult[]> {
  const now = deps.clock();
  const results = new Array<PlaceOrderResult>(input.orders.length);
  const real: number[] = [];
  input.orders.forEach(({ checked }, index) => {
    const { draft, pricing, currency } = checked;
    if (draft.dryrun)
      results[index] = {
        kind: 'dry-run',
        order: toDryRunResponse(pricing, currency, draft.referenceId, now),
      };
    else real.push(index);
  });
  const orders = real.map((index) => newOrder({ ...input.orders[index]!, clientId: input.clientId }, now));
  const { admitted, retryAfterS, ofClient } = await deps.backpressure.reserve(
    input.clientId,
    orders.map((order) => order.items.length),
  );
  const busy = { kind: 'busy', retryAfterS, ofClient } as const;
  for (const index of real.slice(admitted)) results[index] = busy;
  const accepting = real.slice(0, admitted);
  if (accepting.length > 0) {
    const accepted = await acceptAll(deps, input.clientId, orders.slice(0, admitted));
    const placed = await answers(deps, accepted, input.log);
    accepting.forEach((index, n) => (results[index] = placed[n]!));
  }
  input.log.info(summary(results), 'batch answered');
  return results;
}

/**
 * Items per acceptance transaction. A batch's entries are accepted independently (docs/api.md#batches), so a
 * large batch is accepted in slices, each its own transaction, yielding between them: 200 orders of 250 items in
 * one SQLite transaction held the web's event loop 5.4 s (issue 41); a slice of 500 items holds it tens of ms.
 */
export const ITEMS_PER_SLICE = 500;

/** The orders in slices of at most ITEMS_PER_SLICE items (an order larger than that alone). */
export function slicesOf<T extends { items: readonly unknown[] }>(orders: readonly T[]): T[][] {
  const slices: T[][] = [];
  let items = ITEMS_PER_SLICE;
  for (const order of orders) {
    if (items + order.items.length > ITEMS_PER_SLICE) {
      slices.push([]);
      items = 0;
    }
    slices.at(-1)!.push(order);
    items += order.items.length;
  }
  return slices;
}

/**
 * Accepts the admitted orders, a slice per transaction (slicesOf), letting other requests be answered between
 * slices; the items of what they did not create are given back to backpressure. A failing slice fails the batch
 * request as a failing transaction did: the slices before it are kept, and the same batch sent again finds them
 * as duplicates.
 */
async function acceptAll(
  deps: PlaceOrderBatchDeps,
  clientId: number,
  orders: NewOrder[],
): Promise<AcceptResult[]> {
  const accepted: AcceptResult[] = [];
  const itemsOf = (some: readonly NewOrder[]) => some.reduce((sum, order) => sum + order.items.length, 0);
  try {
    for (const slice of slicesOf(orders)) {
      if (accepted.length > 0) await new Promise((resolve) => setImmediate(resolve));
      accepted.push(...(await deps.store.orders.acceptMany(slice)));
    }
    return accepted;
  } finally {
    const created = orders.filter((_, n) => accepted[n]?.kind === 'created');
    deps.backpressure.release(clientId, itemsOf(orders), itemsOf(created));
  }
}

/**
 * Enqueues the accepted orders (duplicates again, in case their first enqueue was lost); new orders are answered
 * as their acceptance stored them, duplicates read back as they now stand.
 */
async function answers(
  deps: PlaceOrderBatchDeps,
  accepted: readonly AcceptResult[],
  log: Logger,
): Promise<PlaceOrderResult[]> {
  const ids = accepted.flatMap((a) => (a.kind === 'conflict' ? [] : [a.orderId]));
  const duplicates = accepted.flatMap((a) => (a.kind === 'duplicate' ? [a.orderId] : []));
  // The orders are stored: Redis takes the jobs while the store reads the duplicates.
  const [, read] = await Promise.all([
    enqueueAll(deps.queue, ids, log),
    duplicates.length > 0 ? deps.store.orders.getMany(duplicates) : [],
  ]);
  const stored = new Map(read.map((o) => [o.order.orderId, o]));
  return accepted.map((a) =>
    a.kind === 'conflict' ? a : placed(a.kind === 'created' ? a.stored : stored.get(a.orderId)!, a.kind),
  );
}

function placed({ order, items }: OrderWithItems, kind: 'created' | 'duplicate'): PlaceOrderResult {
  const queued = items.some((item) => item.status === ItemStatus.QUEUED);
  return {
    kind: 'placed',
    duplicate: kind === 'duplicate',
    queued,
    order: toOrderResponse(order, items, false),
  };
}

/** The orders are stored before this runs; a Redis outage leaves them QUEUED for reconciliation to enqueue. */
async function enqueueAll(queue: OrderQueue, orderIds: readonly number[], log: Logger): Promise<void> {
  try {
    await queue.enqueueMany(orderIds);
  } catch (err) {
    log.warn(
      { err, orders: orderIds.length },
      'enqueue failed; reconciliation will enqueue the stored orders',
    );
  }
}

function summary(results: readonly PlaceOrderResult[]): Record<string, number> {
  const counts: Record<string, number> = { entries: results.length };
  for (const r of results) {
    const key = r.kind === 'placed' ? (r.duplicate ? 'duplicate' : 'created') : r.kind;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}
