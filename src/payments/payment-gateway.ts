import type { GatewayTarget, SettleToResult } from '../store/port/store.port.js';

/** What the worker needs of a card processor. Every call is idempotent by its keys, so a retried job never charges twice. */
export interface PaymentGateway {
  /**
   * Its authorisations are commits in the order store's own log (the sandbox processor): one that a crash takes
   * back goes with the reservation committed before it, so an attempt may pay before its reservation is durable.
   * A processor outside the store (absent) is paid only once the reservation is durable: it would keep an
   * authorisation for an order the store lost.
   */
  readonly inStore?: true;
  /** Authorises `amountCents` once per key; a second call with the same key returns the first outcome. */
  authorize(request: {
    key: string;
    cardId: number;
    amountCents: number;
    currency: string;
  }): Promise<AuthorizeResult>;
  /**
   * Brings the key's authorisation to `amountCents`, the order's ledger at `version`, unless the processor
   * already holds that version or a later one ('superseded'): absolute and versioned, so calls that arrive
   * late, twice or out of order cannot move it away from the last target. With no authorisation under the key,
   * a target of 0 is recorded so that a later authorisation is declined; a target above 0 is 'not-authorised'
   * (the caller keeps it pending and asks again). A target below 0 is refused: it would be a bug.
   */
  settleTo(request: GatewayTarget): Promise<SettleToResult>;
}

export interface AuthorizeResult {
  approved: boolean;
  amountCents: number;
}

export type { SettleToResult };

export const paymentKey = (orderId: number): string => `order-${orderId}`;

/** A payment call's span attributes: the order its key names (`order.id`, docs/api.md#operations) and the amount. */
export function paymentSpanAttributes(request: unknown): Record<string, number> {
  const { key, amountCents } = (request ?? {}) as { key?: unknown; amountCents?: unknown };
  const orderId = typeof key === 'string' ? /^order-(\d+)$/.exec(key)?.[1] : undefined;
  return {
    ...(orderId ? { 'order.id': Number(orderId) } : {}),
    ...(typeof amountCents === 'number' ? { 'payment.amount_cents': amountCents } : {}),
  };
}
