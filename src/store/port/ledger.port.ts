/** Part of the store port (../store.port.ts): what the gateway must hold for an order. */
import type { Currency } from '../../domain/money.js';

/**
 * An order's payment as its ledger says it must stand. `version` moves on, under the order's row lock, with
 * every change of what the gateway must hold (an adjustment entry, the order given up on); `amountCents` is
 * authorize + extra_shipping − void − refund over the ledger in the same snapshot. The gateway is brought to
 * (amount, version) and keeps the highest version it was told, so calls arriving in any order, any number of
 * times, converge on the last one.
 */
export interface PaymentTarget {
  orderId: number;
  cardId: number;
  currency: Currency;
  amountCents: number;
  version: number;
  /** The highest version the gateway confirmed; the payment is pending while it is below `version`. */
  appliedVersion: number;
}

export interface LedgerStore {
  paymentTarget(orderId: number): Promise<PaymentTarget | null>;
  /** Records that the gateway holds `version` (or a later one); never moves backwards. */
  markPaymentApplied(orderId: number, version: number): Promise<void>;
}
