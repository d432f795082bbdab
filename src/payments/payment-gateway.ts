/** What the worker needs of a card processor. Every call is idempotent by its keys, so a retried job never charges twice. */
export interface PaymentGateway {
  /** Authorises `amountCents` once per key; a second call with the same key returns the first outcome. */
  authorize(request: {
    key: string;
    cardId: number;
    amountCents: number;
    currency: string;
  }): Promise<AuthorizeResult>;
  /**
   * Changes the key's authorisation by `deltaCents` (negative releases, positive adds), once per `step`;
   * `deltaCents` null releases whatever is left. A key that is not authorised (yet) is a no-op that the same
   * step can repeat later. True when this call changed the authorisation.
   */
  adjust(key: string, step: string, deltaCents: number | null): Promise<boolean>;
}

export interface AuthorizeResult {
  approved: boolean;
  amountCents: number;
}

export const paymentKey = (orderId: number): string => `order-${orderId}`;
