import type { OrderCheck, OrderIntake, OrderRequestRead } from './order-intake.js';
import {
  placeOrder,
  type PlaceOrderDeps,
  type PlaceOrderInput,
  type PlaceOrderResult,
} from './place-order.js';

export type SubmitOrderDeps = PlaceOrderDeps & { intake: Pick<OrderIntake, 'check'> };

/** The check's refusal: ordering locked, or what the store found wrong (none: the edge's own problems decide). */
export type OrderRefusal = Exclude<OrderCheck, { kind: 'checked' }>;

export type SubmitOrderResult = PlaceOrderResult | OrderRefusal;

/**
 * POST /v1/orders (docs/api.md#endpoints): the order request as the edge read it, checked (card-testing lock,
 * listings, card, pricing: order-intake.ts) and, when it passes, placed (place-order.ts).
 */
export async function submitOrder(
  deps: SubmitOrderDeps,
  input: Omit<PlaceOrderInput, 'checked'> & { request: OrderRequestRead },
): Promise<SubmitOrderResult> {
  const { request, ...order } = input;
  const check = await deps.intake.check(input.clientId, request);
  if (check.kind !== 'checked') return check;
  return placeOrder(deps, { ...order, checked: check.order });
}
