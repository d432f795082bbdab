import {
  describeStatus,
  isFinal,
  isItemStatus,
  ItemStatus,
  ledgerKindOf,
  TRANSITIONS,
  updateMoves,
  type ItemStatusCode,
} from '../domain/item-status.js';
import type { Logger } from '../logger.js';
import type { PaymentGateway } from '../payments/payment-gateway.js';
import { newOrderEvent } from './order-events.js';
import { syncPayment } from './payment-sync.js';
import type { ItemMoveWrite, Store, StoredItem, StoredItemWithCurrency } from '../store/port/store.port.js';

export interface ItemLifecycleDeps {
  store: Pick<Store, 'items' | 'ledger'>;
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
  /** Reconciliation's guard: move only an item still in `from` since before `changedBefore`. */
  expect?: { from: ItemStatusCode; changedBefore: number };
}

export type MoveItemOutcome =
  | { kind: 'moved'; from: ItemStatusCode; item: StoredItem }
  | { kind: 'invalid'; message: string }
  | { kind: 'missing'; message: string }
  | { kind: 'refused'; message: string; allowed: readonly ItemStatusCode[] }
  | { kind: 'unexpected' };

/** The item's share of its order's payment: what voiding or refunding it gives back. */
export const shareOf = (item: Pick<StoredItem, 'costCents' | 'shipcostCents' | 'taxCents'>): number =>
  item.costCents + item.shipcostCents + item.taxCents;

// A move races only with another move of the same item; reading again and deciding again settles it.
const MOVE_ROUNDS = 5;

const ALL_CODES = Object.values(ItemStatus).sort((a, b) => a - b);

/**
 * Moves an item as docs/api.md#item-statuses-and-moves allows, deciding against its status inside one transaction.
 * A move that voids, refunds or adds extra shipping moves the order's payment version on with its ledger entry;
 * after the commit the gateway is brought to the ledger, and if that fails the order stays pending and
 * reconciliation brings it there later.
 */
export async function moveItem(deps: ItemLifecycleDeps, request: MoveItemRequest): Promise<MoveItemOutcome> {
  const problem = checkRequest(request);
  if (problem) return { kind: 'invalid', message: problem };
  const to = request.to as ItemStatusCode;
  const now = request.now ?? deps.clock();
  for (let round = 0; round < MOVE_ROUNDS; round += 1) {
    const item = await deps.store.items.getItem(request.orderItemId);
    if (!item) return { kind: 'missing', message: `no order item ${request.orderItemId}` };
    const from = item.status;
    const { expect } = request;
    if (expect && (from !== expect.from || item.statusChangedAt >= expect.changedBefore))
      return { kind: 'unexpected' };
    const allowed = isItemStatus(from) ? updateMoves(from) : [];
    if (!allowed.includes(to)) return { kind: 'refused', message: refusal(item, to, allowed), allowed };
    const write = planMove(item, from, to, request, now);
    const result = await deps.store.items.applyMove(write);
    if (result.kind === 'changed') continue;
    deps.logger.info({ orderItemId: request.orderItemId, from, to }, 'item moved');
    if (write.ledger && result.entryId !== null) await trySync(deps, write.ledger.orderId);
    return { kind: 'moved', from, item: result.item };
  }
  throw new Error(`order item ${request.orderItemId} kept changing while it was moved`);
}

/**
 * What a move writes, decided from the item as read: leaving the bought path returns a copy to stock and
 * voids the item's share, 35 → 24 refunds it, 93 → 4 adds the extra shipping to the shipping cost.
 */
function planMove(
  item: StoredItemWithCurrency,
  from: ItemStatusCode,
  to: ItemStatusCode,
  request: MoveItemRequest,
  now: number,
): ItemMoveWrite {
  const kind = ledgerKindOf(from, to);
  const extra = item.extraShippingCents ?? 0;
  return {
    orderItemId: item.orderItemId,
    from,
    fromChangedAt: item.statusChangedAt,
    to,
    now,
    addShipcostCents: kind === 'extra_shipping' ? extra : 0,
    extraShippingCents: request.extraShippingCents ?? null,
    shippingCompany: request.shippingCompany ?? null,
    trackingId: request.trackingId ?? null,
    returnStockOf: kind === 'void' ? item.listingId : null,
    event: newOrderEvent(),
    ledger: kind && {
      entryKey: `${kind}:item-${item.orderItemId}`,
      orderId: item.orderId,
      orderItemId: item.orderItemId,
      kind,
      amountCents: kind === 'extra_shipping' ? extra : shareOf(item),
      currency: item.currency,
    },
  };
}

async function trySync(deps: ItemLifecycleDeps, orderId: number) {
  try {
    await syncPayment(deps, orderId);
  } catch (err) {
    // The move and its ledger entry are committed: reconciliation brings the gateway to the ledger.
    deps.logger.warn({ err, orderId }, 'payment adjustment left for reconciliation');
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

function refusal(item: StoredItem, to: ItemStatusCode, allowed: readonly ItemStatusCode[]): string {
  const from = item.status;
  const subject = `order item ${item.orderItemId} is ${describeStatus(from)}`;
  if (from === ItemStatus.QUEUED) {
    const worker = TRANSITIONS[from].map(describeStatus).join(', ');
    return `${subject}: only the order worker moves a queued item on (to ${worker}); no update is allowed yet`;
  }
  if (isFinal(from)) return `${subject}, which is final: no move is allowed`;
  return `${subject}: cannot move to ${describeStatus(to)}; allowed: ${allowed.map(describeStatus).join(', ')}`;
}
