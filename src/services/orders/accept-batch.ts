import { ItemStatus } from '../../domain/item-status.js';
import type { Logger } from '../../logger.js';
import type { OrderQueue } from '../../queue/order.queue.js';
import type { AcceptResult, OrderWithItems } from '../../store/port/store.port.js';
import { loopTurns, nextTurn } from '../loop-turns.js';
import { toDryRunResponse, toOrderResponse } from '../order-view.js';
import { ORDER_PROBLEMS, type CheckedOrder } from './order-check.js';
import { busy, newOrder, type PlaceOrderDeps, type PlaceOrderResult } from './place-order.js';

export type AcceptBatchDeps = Pick<PlaceOrderDeps, 'store' | 'queue' | 'clock' | 'backpressure'>;

/** One order of a batch that passed its check, with its own idempotency key and request hash. */
export interface BatchOrder {
  requestId: string;
  requestHash: string;
  checked: CheckedOrder;
}

/**
 * A batch's checked orders (docs/api.md#batches): dry runs priced; real orders admitted by backpressure in
 * request order, accepted in slices of up to a hundred items (a store transaction each), enqueued in one round
 * trip and answered at once, as with Prefer: respond-async. One result per order, in the same order, as
 * `placeOrder` would give it.
 */
export async function acceptBatch(
  deps: AcceptBatchDeps,
  input: { clientId: number; orders: readonly BatchOrder[]; log: Logger },
): Promise<PlaceOrderResult[]> {
  const now = deps.clock();
  const turn = loopTurns();
  const results = new Array<PlaceOrderResult>(input.orders.length);
  const real: number[] = [];
  for (const [index, { checked }] of input.orders.entries()) {
    await turn();
    const { draft, pricing, currency } = checked;
    if (draft.dryrun)
      results[index] = {
        kind: 'dry-run',
        order: toDryRunResponse(pricing, currency, draft.referenceId, now),
      };
    else real.push(index);
  }
  const { admitted, retryAfterS, ofClient } = await deps.backpressure.reserve(
    input.clientId,
    real.map((index) => itemsOf(input.orders[index]!)),
  );
  const refused = busy({ retryAfterS, ofClient });
  for (const index of real.slice(admitted)) results[index] = refused;
  const accepting = real.slice(0, admitted);
  if (accepting.length > 0) {
    const orders = accepting.map((index) => input.orders[index]!);
    const accepted = await acceptAll(deps, { clientId: input.clientId, orders, now });
    const placed = await answers(deps, orders, accepted, input.log);
    accepting.forEach((index, n) => (results[index] = placed[n]!));
  }
  input.log.info(summary(results), 'batch answered');
  return results;
}

/** The items an order of the batch will have (one per unit of each line, as `newOrder` makes them). */
const itemsOf = ({ checked }: BatchOrder): number =>
  checked.pricing.lines.reduce((sum, line) => sum + line.items.length, 0);

/**
 * Items per acceptance transaction. A batch's entries are accepted independently (docs/api.md#batches), so a
 * large batch is accepted in slices, each its own transaction, with a turn of the event loop between them: on
 * SQLite a slice holds the web's loop while it runs. 200 orders of 250 items in one transaction held it 5.4 s;
 * slices of 500 items still held it tens of ms each, plus the flush (each slice's then), and garbage collections
 * of their rows on top. At most 100 items: an order of more (up to 250) is a slice of its own.
 */
export const ITEMS_PER_SLICE = 100;

/** The orders in slices of at most ITEMS_PER_SLICE items (`itemsOf` counts an order's), an order larger than that alone. */
export function slicesOf<T>(orders: readonly T[], itemsOf: (order: T) => number): T[][] {
  const slices: T[][] = [];
  let items = ITEMS_PER_SLICE;
  for (const order of orders) {
    const count = itemsOf(order);
    if (items + count > ITEMS_PER_SLICE) {
      slices.push([]);
      items = 0;
    }
    slices.at(-1)!.push(order);
    items += count;
  }
  return slices;
}

/** An order of the batch as its slice left it: a new one answered at once, a duplicate to read back, a conflict. */
type Accepted =
  { kind: 'created'; orderId: number; answer: PlaceOrderResult } | Exclude<AcceptResult, { kind: 'created' }>;

/**
 * Accepts the admitted orders, a slice per transaction (slicesOf), letting other requests be answered between
 * slices. An order's items are made just before its slice and a new order's answer right after it, so what the
 * store gave back for it is dropped at once: a batch's items are not all in memory three times over, for the
 * garbage collector to go through. The items of what they did not create are given back to backpressure. A failing
 * slice fails the batch request as a failing transaction did: the slices before it are kept, and the same batch
 * sent again finds them as duplicates.
 */
async function acceptAll(
  deps: AcceptBatchDeps,
  { clientId, orders, now }: { clientId: number; orders: readonly BatchOrder[]; now: number },
): Promise<Accepted[]> {
  const accepted: Accepted[] = [];
  let created = 0;
  try {
    for (const slice of slicesOf(orders, itemsOf)) {
      if (accepted.length > 0) await nextTurn();
      const results = await deps.store.orders.acceptMany(slice.map((o) => newOrder({ ...o, clientId }, now)));
      for (const [n, result] of results.entries()) {
        if (result.kind !== 'created') accepted.push(result);
        else {
          created += itemsOf(slice[n]!);
          accepted.push({ kind: 'created', orderId: result.orderId, answer: placed(result.stored, false) });
        }
      }
    }
    return accepted;
  } finally {
    deps.backpressure.release(
      clientId,
      orders.reduce((sum, o) => sum + itemsOf(o), 0),
      created,
    );
  }
}

/**
 * Enqueues the accepted orders (duplicates again, in case their first enqueue was lost); duplicates are answered
 * as they now stand, read back in slices as they were accepted (a batch sent again reads all its orders back).
 */
async function answers(
  deps: AcceptBatchDeps,
  orders: readonly BatchOrder[],
  accepted: readonly Accepted[],
  log: Logger,
): Promise<PlaceOrderResult[]> {
  const ids = accepted.flatMap((a) => (a.kind === 'conflict' ? [] : [a.orderId]));
  const duplicates = accepted.flatMap((a, n) =>
    a.kind === 'duplicate' ? [{ orderId: a.orderId, items: itemsOf(orders[n]!) }] : [],
  );
  // The orders are committed: Redis takes the jobs while the store reads the duplicates and makes what it
  // accepted durable, as it must be before any of it is answered (OrderStore.accept).
  const [, read] = await Promise.all([
    enqueueAll(deps.queue, ids, log),
    readBack(deps, duplicates),
    deps.store.orders.durable(),
  ]);
  return accepted.map((a) =>
    a.kind === 'created'
      ? a.answer
      : a.kind === 'duplicate'
        ? read.get(a.orderId)!
        : { kind: 'refused', problems: [ORDER_PROBLEMS.conflict('requestId')] },
  );
}

/** The orders answered as they stand, read in slices of at most ITEMS_PER_SLICE items, each in a turn of its own. */
async function readBack(
  deps: AcceptBatchDeps,
  orders: readonly { orderId: number; items: number }[],
): Promise<Map<number, PlaceOrderResult>> {
  const read = new Map<number, PlaceOrderResult>();
  for (const slice of slicesOf(orders, (o) => o.items)) {
    await nextTurn();
    for (const order of await deps.store.orders.getMany(slice.map((o) => o.orderId)))
      read.set(order.order.orderId, placed(order, true));
  }
  return read;
}

function placed({ order, items }: OrderWithItems, duplicate: boolean): PlaceOrderResult {
  const queued = items.some((item) => item.status === ItemStatus.QUEUED);
  return {
    kind: 'placed',
    duplicate,
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
    const key =
      r.kind === 'placed'
        ? r.duplicate
          ? 'duplicate'
          : 'created'
        : r.kind === 'refused'
          ? r.problems[0].kind
          : r.kind;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}
