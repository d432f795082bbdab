import type { Currency, UsdPer } from '../domain/money.js';
import { priceOrder } from '../domain/pricing.js';
import type { TaxRules } from '../domain/tax.js';
import type { Logger } from '../logger.js';
import { paymentKey, type PaymentGateway } from '../payments/payment-gateway.js';
import type { OrderProcessingRepository, PriceStoredOrder } from '../store/order-processing.repository.js';

export interface ProcessOrderDeps {
  processing: OrderProcessingRepository;
  payments: PaymentGateway;
  usdPer: UsdPer;
  taxRules: TaxRules;
  clock: () => number;
  maxAttempts: number;
  logger: Logger;
}

export type ProcessOutcome = 'missing' | 'settled' | 'already-settled' | 'failed';

/** Prices a stored order with the same module as dry runs, from what the order recorded at acceptance. */
export function priceStoredOrder(usdPer: UsdPer, taxRules: TaxRules): PriceStoredOrder {
  return (order, items, catalog) => {
    const lines = new Map<number, { listingId: number; quantity: number; maxPriceCents: number | null }>();
    for (const item of items) {
      if (!lines.has(item.line_no)) {
        lines.set(item.line_no, {
          listingId: item.listing_id,
          quantity: item.line_quantity,
          maxPriceCents: item.max_price_cents,
        });
      }
    }
    const shipAddr = JSON.parse(order.ship_addr) as { country: string; provstate?: string | null };
    return priceOrder({
      currency: order.currency as Currency,
      shippingMode: order.shipping_mode,
      shipTo: { country: shipAddr.country, provstate: shipAddr.provstate ?? null },
      totalMaxPriceCents: order.total_max_price_cents,
      lines: [...lines.entries()].sort(([a], [b]) => a - b).map(([, line]) => line),
      listings: catalog.listings,
      vendors: catalog.vendors,
      usdPer,
      taxRules,
    });
  };
}

/**
 * One attempt at an order; safe to run any number of times: every step is guarded by the order's phase in
 * SQLite, and the payment is keyed by the order so a retry finds the first authorisation instead of a second.
 */
export async function processOrder(deps: ProcessOrderDeps, orderId: number): Promise<ProcessOutcome> {
  const price = priceStoredOrder(deps.usdPer, deps.taxRules);
  const step = await deps.processing.beginAttempt(orderId, deps.maxAttempts, deps.clock(), price);
  switch (step.kind) {
    case 'missing':
      return 'missing';
    case 'settled':
      return 'already-settled';
    case 'exhausted':
      await failOrder(deps, orderId);
      return 'failed';
    case 'pay': {
      const key = paymentKey(orderId);
      const result = await deps.payments.authorize({ key, ...step });
      await deps.processing.settlePayment(orderId, result.approved, deps.clock());
      deps.logger.info(
        { orderId, approved: result.approved, amountCents: step.amountCents },
        'order settled',
      );
      return 'settled';
    }
  }
}

/** Gives up on an order after its last attempt: any authorisation released first, then the items FAILED. */
export async function failOrder(
  deps: Pick<ProcessOrderDeps, 'payments' | 'processing' | 'clock' | 'logger'>,
  orderId: number,
) {
  await deps.payments.adjust(paymentKey(orderId), 'failed', null);
  if (await deps.processing.fail(orderId, deps.clock()))
    deps.logger.warn({ orderId }, 'order failed after its last attempt');
}
