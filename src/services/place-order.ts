import type { Logger } from '../logger.js';
import { toCents } from '../domain/money.js';
import { ItemStatus } from '../domain/item-status.js';
import { ApiError } from '../http/errors.js';
import type { AuthContext } from '../http/respond.js';
import { SvcStatus, type SvcStatusCode } from '../http/status-codes.js';
import type { OrderOutcomes } from '../queue/order-outcomes.js';
import type { OrderQueue } from '../queue/order.queue.js';
import type { OrderRepository } from '../store/order.repository.js';
import type { CheckedOrder, OrderIntake } from './order-intake.js';
import { toDryRunResponse, toOrderResponse, type OrderResponse } from './order-view.js';

export interface PlaceOrderDeps {
  intake: OrderIntake;
  orders: OrderRepository;
  queue: OrderQueue;
  outcomes: OrderOutcomes;
  clock: () => number;
  orderWaitMs: number;
}

export interface PlaceOrderInput {
  auth: AuthContext;
  body: Record<string, unknown>;
  requestHash: string;
  respondAsync: boolean;
  log: Logger;
}

export interface PlaceOrderResult {
  code: SvcStatusCode;
  order: OrderResponse;
}

/** POST /v1/orders: a dry run answered from pricing, or a real order recorded, enqueued and awaited. */
export async function placeOrder(deps: PlaceOrderDeps, input: PlaceOrderInput): Promise<PlaceOrderResult> {
  const checked = await deps.intake.check(input.auth, input.body);
  const { request, currency, pricing } = checked;
  if (request.dryrun) {
    return {
      code: SvcStatus.DRY_RUN_OK,
      order: toDryRunResponse(pricing, currency, request.referenceId, deps.clock()),
    };
  }
  const accepted = await deps.orders.accept(newOrder(input, checked, deps.clock()));
  if (accepted.kind === 'conflict') {
    throw new ApiError(
      SvcStatus.REQUEST_ID_CONFLICT,
      'Svc-RequestId: already used by this access key for a different request',
    );
  }
  const { orderId } = accepted;
  const log = input.log.child({ orderId });
  const enqueued = await enqueue(deps.queue, orderId, log);
  if (accepted.kind === 'created' && enqueued && !input.respondAsync && deps.orderWaitMs > 0) {
    await deps.outcomes.wait(orderId, deps.orderWaitMs, () => isSettled(deps.orders, orderId));
  }
  const stored = (await deps.orders.get(orderId))!;
  const queued = stored.items.some((item) => item.status === ItemStatus.QUEUED);
  const code = accepted.kind === 'duplicate' && queued ? SvcStatus.DUPLICATE_PROCESSING : SvcStatus.CREATED;
  log.info({ duplicate: accepted.kind === 'duplicate', queued }, 'order answered');
  return { code, order: toOrderResponse(stored.order, stored.items, false) };
}

/** The order is stored before this runs; a Redis outage leaves it QUEUED for reconciliation to enqueue. */
async function enqueue(queue: OrderQueue, orderId: number, log: Logger): Promise<boolean> {
  try {
    await queue.enqueue(orderId);
    return true;
  } catch (err) {
    log.warn({ err }, 'enqueue failed; reconciliation will enqueue the stored order');
    return false;
  }
}

function isSettled(orders: OrderRepository, orderId: number): boolean {
  return orders.phaseOf(orderId) === 'settled';
}

function newOrder(input: PlaceOrderInput, checked: CheckedOrder, now: number) {
  const { request, currency, card, pricing } = checked;
  return {
    clientId: input.auth.clientId,
    requestId: input.auth.requestId,
    requestHash: input.requestHash,
    referenceId: request.referenceId ?? null,
    domain: request.domain,
    currency,
    shippingMode: request.shippingMode,
    shipAddr: request.shipAddr,
    billAddr: request.billAddr,
    cardId: card.cardId,
    totalMaxPriceCents: maxPriceOf(request.totalMaxPrice),
    taxCents: null,
    taxModel: null,
    createdAt: now,
    items: pricing.lines.flatMap((line, lineNo) =>
      line.items.map((item) => ({
        lineNo,
        listingId: line.listingId,
        vendorId: line.vendorId,
        title: line.title,
        isbn: line.isbn,
        lineQuantity: line.quantity,
        maxPriceCents: maxPriceOf(request.listings[lineNo]?.maxPrice),
        minDays: line.minDays,
        maxDays: line.maxDays,
        costCents: item.costCents,
        shipcostCents: 0,
      })),
    ),
  };
}

const maxPriceOf = (amount: number | undefined): number | null =>
  amount === undefined ? null : toCents(amount);
