import {
  describeStatus,
  isFinal,
  isItemStatus,
  ItemStatus,
  TRANSITIONS,
  type ItemStatusCode,
} from '../domain/item-status.js';
import type { Logger } from '../logger.js';
import { paymentKey, type PaymentGateway } from '../payments/payment-gateway.js';
import type { ItemMove, ItemRepository, PendingAdjustment } from '../store/item.repository.js';
import type { OrderItemRow } from '../store/order.rows.js';

export interface ItemLifecycleDeps {
  items: ItemRepository;
  payments: PaymentGateway;
  clock: () => number;
  logger: Logger;
}

export interface MoveItemRequest {
  orderItemId: number;
  /** Any number: a code outside the table is refused as invalid. */
  to: number;
  shippingCompany?: string;
  trackingId?: string;
  extraShippingCents?: number;
  /** The time of the move; the deps' clock when absent (a reconciliation pass passes its own). */
  now?: number;
  expect?: ItemMove['expect'];
}

export type MoveItemOutcome =
  | { kind: 'moved'; from: ItemStatusCode; item: OrderItemRow }
  | { kind: 'invalid'; message: string }
  | { kind: 'missing'; message: string }
  | { kind: 'refused'; message: string; allowed: readonly ItemStatusCode[] }
  | { kind: 'unexpected' };

const ALL_CODES = Object.values(ItemStatus).sort((a, b) => a - b);

/**
 * Moves an item as CONTRACT.md section 8 allows, deciding against its status inside one transaction.
 * A move that voids, refunds or adds extra shipping is told to the gateway after the commit; if that fails
 * the ledger entry stays pending and reconciliation applies it later.
 */
export async function moveItem(deps: ItemLifecycleDeps, request: MoveItemRequest): Promise<MoveItemOutcome> {
  const problem = checkRequest(request);
  if (problem) return { kind: 'invalid', message: problem };
  const to = request.to as ItemStatusCode;
  const now = request.now ?? deps.clock();
  const result = await deps.items.move({ ...request, to, now });
  switch (result.kind) {
    case 'missing':
      return { kind: 'missing', message: `no order item ${request.orderItemId}` };
    case 'unexpected':
      return { kind: 'unexpected' };
    case 'refused':
      return { kind: 'refused', message: refusal(result.item, to, result.allowed), allowed: result.allowed };
    case 'moved':
      deps.logger.info({ orderItemId: request.orderItemId, from: result.from, to }, 'item moved');
      if (result.adjustment) await tryApply(deps, result.adjustment, now);
      return { kind: 'moved', from: result.from, item: result.item };
  }
}

/** Applies one outbox entry at the gateway (idempotent per entry key), then marks it applied. */
export async function applyAdjustment(
  deps: Pick<ItemLifecycleDeps, 'items' | 'payments'>,
  adjustment: PendingAdjustment,
  now: number,
): Promise<void> {
  await deps.payments.adjust(paymentKey(adjustment.orderId), adjustment.entryKey, adjustment.deltaCents);
  await deps.items.markApplied(adjustment.entryKey, now);
}

async function tryApply(deps: ItemLifecycleDeps, adjustment: PendingAdjustment, now: number) {
  try {
    await applyAdjustment(deps, adjustment, now);
  } catch (err) {
    // The move is committed and its ledger entry is the outbox: reconciliation retries the adjustment.
    deps.logger.warn({ err, entryKey: adjustment.entryKey }, 'payment adjustment left for reconciliation');
  }
}

function checkRequest(r: MoveItemRequest): string | null {
  if (!isItemStatus(r.to)) return `${r.to} is not an item status; the codes are ${ALL_CODES.join(', ')}`;
  const requested = describeStatus(ItemStatus.EXTRA_SHIPPING_REQUESTED);
  if (r.to === ItemStatus.EXTRA_SHIPPING_REQUESTED) {
    const cents = r.extraShippingCents;
    if (cents === undefined || !Number.isSafeInteger(cents) || cents <= 0)
      return `an extra shipping amount greater than 0 is required with ${requested}`;
  } else if (r.extraShippingCents !== undefined) {
    return `an extra shipping amount goes only with ${requested}`;
  }
  const shipping = r.shippingCompany !== undefined || r.trackingId !== undefined;
  if (shipping && r.to !== ItemStatus.SHIPPED)
    return `a shipping company or tracking id goes only with ${describeStatus(ItemStatus.SHIPPED)}`;
  return null;
}

function refusal(item: OrderItemRow, to: ItemStatusCode, allowed: readonly ItemStatusCode[]): string {
  const from = item.status as ItemStatusCode;
  const subject = `order item ${item.order_item_id} is ${describeStatus(from)}`;
  if (from === ItemStatus.QUEUED) {
    const worker = TRANSITIONS[from].map(describeStatus).join(', ');
    return `${subject}: only the order worker moves a queued item on (to ${worker}); no update is allowed yet`;
  }
  if (isFinal(from)) return `${subject}, which is final: no move is allowed`;
  return `${subject}: cannot move to ${describeStatus(to)}; allowed: ${allowed.map(describeStatus).join(', ')}`;
}
