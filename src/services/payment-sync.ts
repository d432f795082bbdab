import type { Logger } from '../logger.js';
import { paymentKey, type PaymentGateway } from '../payments/payment-gateway.js';
import type { Store } from '../store/port/store.port.js';

export interface PaymentSyncDeps {
  store: Pick<Store, 'ledger'>;
  payments: PaymentGateway;
  logger: Logger;
}

/**
 * applied: the gateway now holds the order's ledger (or a later version of it); in-sync: nothing to do;
 * pending: the gateway has no authorisation to set yet (asked again by reconciliation); below-zero: the ledger
 * says less than nothing, a bug that is logged and left for an operator, never floored; missing: no such order.
 */
export type PaymentSyncOutcome = 'applied' | 'in-sync' | 'pending' | 'below-zero' | 'missing';

/**
 * Brings what the gateway holds for an order to what its ledger says, as one absolute, versioned target: safe
 * to call any number of times, from any process, in any order (a late call carries an older version and is
 * superseded). A gateway error is thrown; the order stays pending until a call succeeds.
 */
export async function syncPayment(deps: PaymentSyncDeps, orderId: number): Promise<PaymentSyncOutcome> {
  const target = await deps.store.ledger.paymentTarget(orderId);
  if (!target) return 'missing';
  if (target.appliedVersion >= target.version) return 'in-sync';
  const { amountCents, version } = target;
  if (amountCents < 0) {
    deps.logger.error({ orderId, amountCents, version }, 'payment target below zero: left unapplied');
    return 'below-zero';
  }
  const result = await deps.payments.settleTo({
    key: paymentKey(orderId),
    cardId: target.cardId,
    currency: target.currency,
    amountCents,
    version,
  });
  if (result === 'not-authorised') {
    deps.logger.warn({ orderId, amountCents, version }, 'payment not authorised yet: target left pending');
    return 'pending';
  }
  await deps.store.ledger.markPaymentApplied(orderId, version);
  return 'applied';
}
