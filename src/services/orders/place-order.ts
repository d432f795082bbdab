import { ItemStatus } from '../../domain/item-status.js';
import type { Logger } from '../../logger.js';
import type { OrderOutcomes } from '../../queue/order-outcomes.js';
import type { OrderQueue } from '../../queue/order.queue.js';
import type { AcceptResult, NewOrder, Store } from '../../store/port/store.port.js';
import { inSpan, withOrder } from '../../tracing/tracing.js';
import type { Admission, Backpressure } from '../backpressure.js';
import { toDryRunResponse, toOrderResponse, type OrderResponse } from '../order-view.js';
import {
  ORDER_PROBLEMS,
  centsOrNull,
  type CheckedOrder,
  type OrderCheck,
  type OrderRefusal,
} from './order-check.js';

export interface PlaceOrderDeps {
  store: Pick<Store, 'orders'>;
  queue: OrderQueue;
  outcomes: OrderOutcomes;
  clock: () => number;
  orderWaitMs: number;
  backpressure: Pick<Backpressure, 'reserve' | 'release'>;
  orderCheck: Pick<OrderCheck, 'check'>;
}

export interface PlaceOrderInput {
  clientId: number;
  /** The client's idempotency key (Svc-RequestId) and a hash of what it was sent with. */
  requestId: string;
  requestHash: string;
  /** The request's body, a JSON object: read and checked here. */
  body: Record<string, unknown>;
  respondAsync: boolean;
  log: Logger;
}

/**
 * dry-run: priced, nothing stored; placed: the order as it now stands, `duplicate` when the same request had
 * placed it before, `queued` while any item waits.
 */
export type PlacedOrder =
  | { kind: 'dry-run'; order: OrderResponse }
  | { kind: 'placed'; duplicate: boolean; queued: boolean; order: OrderResponse };

/**
 * A placed order, or its refusal: what the check found (order-check.ts), the request id used before for another
 * request, or too many orders unsettled (nothing stored, retry after `retryAfterS`).
 */
export type PlaceOrderResult = PlacedOrder | OrderRefusal;

/**
 * POST /v1/orders (docs/api.md#endpoints): the body read and checked (order-check.ts), then a dry run answered
 * from pricing, or a real order accepted (one store transaction), enqueued and awaited. What it placed is logged by
 * the caller, on the request's own line (one line per order, not two).
 */
export async function placeOrder(deps: PlaceOrderDeps, input: PlaceOrderInput): Promise<PlaceOrderResult> {
  const check = await deps.orderCheck.check(input.clientId, input.body);
  if (check.kind === 'refused') return check;
  const { draft, currency, pricing } = check.order;
  if (draft.dryrun) {
    return { kind: 'dry-run', order: toDryRunResponse(pricing, currency, draft.referenceId, deps.clock()) };
  }
  const accepted = await acceptIfRoom(deps, newOrder({ ...input, checked: check.order }, deps.clock()));
  if ('admitted' in accepted) return busy(accepted);
  // What the acceptance committed is told only once it is durable (OrderStore.accept), except through the
  // worker's answer, which it announces after flushes of its own that cover the acceptance.
  if (accepted.kind === 'conflict') {
    await deps.store.orders.durable();
    return { kind: 'refused', problems: [ORDER_PROBLEMS.conflict('Svc-RequestId')] };
  }
  const { orderId } = accepted;
  const waitable = accepted.kind === 'created' && !input.respondAsync && deps.orderWaitMs > 0;
  // From here on every span carries the order's id, in this process and in the worker that takes its job.
  const [enqueued] = await Promise.all([
    withOrder(orderId, () => inSpan('order.enqueue', {}, () => enqueue(deps.queue, orderId, input.log))),
    // Flushed while Redis takes the job, when this process answers from its own acceptance.
    waitable ? undefined : deps.store.orders.durable(),
  ]);
  const waits = waitable && enqueued;
  if (waits) {
    const told = await deps.outcomes.wait(
      orderId,
      deps.orderWaitMs,
      async () => (await deps.store.orders.phaseOf(orderId)) === 'settled',
    );
    // The worker that settled it said what it committed: no read back.
    const answer = told === undefined ? undefined : announcedAnswer(told, orderId);
    if (answer) return { kind: 'placed', duplicate: false, queued: isQueued(answer), order: answer };
  }
  // A new order not waited for is answered as its acceptance stored it (items QUEUED): no read back. One whose
  // job could not be enqueued was to be waited for, so its acceptance is made durable only now.
  if (waitable && !waits) await deps.store.orders.durable();
  const stored =
    accepted.kind === 'created' && !waits ? accepted.stored : (await deps.store.orders.get(orderId))!;
  const queued = stored.items.some((item) => item.status === ItemStatus.QUEUED);
  const duplicate = accepted.kind === 'duplicate';
  return { kind: 'placed', duplicate, queued, order: toOrderResponse(stored.order, stored.items, false) };
}

/**
 * The answer a worker announced with the order's end (the JSON of an OrderResponse), when it is this order's;
 * anything else is set aside and the order read from the store.
 */
function announcedAnswer(text: string, orderId: number): OrderResponse | undefined {
  try {
    const answer = JSON.parse(text) as Partial<OrderResponse> | null;
    return answer?.orderId === orderId && Array.isArray(answer.listings)
      ? (answer as OrderResponse)
      : undefined;
  } catch {
    return undefined;
  }
}

const isQueued = (answer: OrderResponse): boolean =>
  answer.listings.some((listing) => listing.orderItems.some((item) => item.status === ItemStatus.QUEUED));

/** Backpressure's refusal: too many orders (or too many of this client's) wait for the workers. */
export const busy = ({
  retryAfterS,
  ofClient,
}: {
  retryAfterS: number;
  ofClient: boolean;
}): OrderRefusal => ({
  kind: 'refused',
  problems: [ORDER_PROBLEMS.busy(ofClient)],
  retryAfterS,
});

/** Accepts the order when backpressure leaves room for its items; else its refusal (nothing is stored). */
async function acceptIfRoom(deps: PlaceOrderDeps, order: NewOrder): Promise<AcceptResult | Admission> {
  const items = order.items.length;
  const admission = await deps.backpressure.reserve(order.clientId, [items]);
  if (admission.admitted === 0) return admission;
  let created = 0;
  try {
    const accepted = await deps.store.orders.accept(order);
    if (accepted.kind === 'created') created = items;
    return accepted;
  } finally {
    deps.backpressure.release(order.clientId, items, created);
  }
}

/** The order is stored before this runs; a Redis outage leaves it QUEUED for reconciliation to enqueue. */
async function enqueue(queue: OrderQueue, orderId: number, log: Logger): Promise<boolean> {
  try {
    await queue.enqueue(orderId);
    return true;
  } catch (err) {
    log.warn({ err, orderId }, 'enqueue failed; reconciliation will enqueue the stored order');
    return false;
  }
}

/** The order to store: the checked request with its items QUEUED at the price of acceptance. */
export function newOrder(
  input: Pick<PlaceOrderInput, 'clientId' | 'requestId' | 'requestHash'> & { checked: CheckedOrder },
  now: number,
): NewOrder {
  const { draft, currency, card, pricing } = input.checked;
  return {
    clientId: input.clientId,
    requestId: input.requestId,
    requestHash: input.requestHash,
    referenceId: draft.referenceId ?? null,
    domain: draft.domain,
    currency,
    shippingMode: draft.shippingMode,
    shipAddr: draft.shipAddr,
    billAddr: draft.billAddr,
    cardId: card.cardId,
    totalMaxPriceCents: centsOrNull(draft.totalMaxPrice),
    createdAt: now,
    items: pricing.lines.flatMap((line, lineNo) =>
      line.items.map((item) => ({
        lineNo,
        listingId: line.listingId,
        vendorId: line.vendorId,
        title: line.title,
        isbn: line.isbn,
        lineQuantity: line.quantity,
        maxPriceCents: centsOrNull(draft.listings[lineNo]?.maxPrice),
        minDays: line.minDays,
        maxDays: line.maxDays,
        costCents: item.costCents,
      })),
    ),
  };
}
