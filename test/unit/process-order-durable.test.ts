import { describe, it, expect } from 'vitest';
import pino from 'pino';
import { ItemStatus } from '../../src/domain/item-status.js';
import type { PricingCatalog } from '../../src/domain/catalog.js';
import { loadTaxRules } from '../../src/domain/tax.js';
import type { PaymentGateway } from '../../src/payments/payment-gateway.js';
import { US_ADDRESS } from '../helpers/fixtures.js';
import { sleep } from '../helpers/wait.js';
import { attemptOrder, type ProcessOrderDeps } from '../../src/services/process-order.js';
import type {
  AttemptRequest,
  OrderWithItems,
  ProcessingStore,
  Settlement,
} from '../../src/store/port/store.port.js';

// An attempt's count and reservation may resolve before they are durable (SQLite's flush comes later): what acts
// on them outside the store waits for orders.durable(), and the sandbox processor, whose authorisation is a
// commit after the reservation in the store's own log, does not (docs/operating.md, "Durable on one host").

/** A queued order of one copy of listing 7 (10.00 USD, ships domestically from vendor 1). */
function queuedOrder(stock: number): { stored: OrderWithItems; catalog: PricingCatalog } {
  const stored: OrderWithItems = {
    order: {
      orderId: 41,
      clientId: 1,
      requestId: 'r-41',
      requestHash: 'h',
      referenceId: null,
      domain: 'example.com',
      currency: 'USD',
      shippingMode: 'S',
      shipAddr: US_ADDRESS,
      billAddr: US_ADDRESS,
      cardId: 5,
      totalMaxPriceCents: null,
      taxCents: null,
      taxModel: null,
      totalCents: null,
      phase: 'queued',
      attempts: 1,
      leaseUntil: null,
      createdAt: 1,
    },
    items: [
      {
        orderItemId: 410,
        orderId: 41,
        clientId: 1,
        orderCreatedAt: 1,
        lineNo: 0,
        listingId: 7,
        vendorId: 1,
        title: 'A Book',
        isbn: '9780000000007',
        lineQuantity: 1,
        maxPriceCents: null,
        minDays: 3,
        maxDays: 7,
        costCents: 1000,
        shipcostCents: 0,
        taxCents: 0,
        status: ItemStatus.QUEUED,
        updatedAt: 1,
        statusChangedAt: 1,
        shippingCompany: null,
        trackingId: null,
        extraShippingCents: null,
      },
    ],
  };
  const catalog: PricingCatalog = {
    listings: new Map([
      [7, { listingId: 7, vendorId: 1, title: 'A Book', isbn: '9780000000007', priceCents: 1000, stock }],
    ]),
    vendors: new Map([
      [
        1,
        {
          vendorId: 1,
          country: 'USA',
          currency: 'USD',
          active: true,
          rates: { S: { domestic: { firstCents: 399, additionalCents: 199, minDays: 3, maxDays: 7 } } },
        },
      ],
    ]),
  };
  return { stored, catalog };
}

/** A gate: `open()` resolves every `wait()` so far and after. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { wait: () => opened, open };
}

/**
 * The worker's deps over fakes: a processing store whose reservation applies at once, an order store whose
 * `durable()` waits for the gate, a processor that records when it was asked (in or outside the store), and what
 * happened in turn.
 */
function fakes(opts: { inStore: boolean; stock: number }) {
  const { stored, catalog } = queuedOrder(opts.stock);
  const flush = gate();
  const events: string[] = [];
  const processing = {
    async beginAttempt(_orderId: number, _lease: AttemptRequest['lease'], price?: AttemptRequest['price']) {
      events.push('begun');
      const start = { ...stored, catalog };
      price!(start);
      return { ...start, reserved: 'applied' as const };
    },
    async settle(_s: Settlement) {
      events.push('settled');
      return true;
    },
  } as unknown as ProcessingStore;
  const orders = {
    async durable() {
      events.push('durable asked');
      await flush.wait();
      events.push('durable');
    },
  };
  const payments: PaymentGateway = {
    ...(opts.inStore ? { inStore: true as const } : {}),
    async authorize({ amountCents }) {
      events.push('authorised');
      return { approved: true, amountCents };
    },
    async settleTo() {
      return 'applied';
    },
  };
  const deps: ProcessOrderDeps = {
    store: { processing, catalog: {}, orders, ledger: {} } as unknown as ProcessOrderDeps['store'],
    payments,
    usdPer: { USD: 1_000_000n, EUR: 1_080_000n, GBP: 1_270_000n },
    taxRules: loadTaxRules(),
    clock: () => 1_000,
    maxAttempts: 5,
    config: { ATTEMPT_LEASE_S: 30 },
    logger: pino({ level: 'silent' }),
  };
  return { deps, flush, events };
}

/** Lets every pending promise callback run: the fakes resolve in microtasks, which all run before a timer fires. */
const settle = () => sleep(5);

describe('an attempt and the durability of its reservation', () => {
  it('pays a processor outside the store only once the reservation is durable', async () => {
    const { deps, flush, events } = fakes({ inStore: false, stock: 3 });
    const attempt = attemptOrder(deps, 41);
    await settle();
    expect(events).toEqual(['begun', 'durable asked']);
    flush.open();
    expect((await attempt).outcome).toBe('settled');
    expect(events).toEqual(['begun', 'durable asked', 'durable', 'authorised', 'settled']);
  });

  it("pays the sandbox, whose authorisation is a commit in the store's own log, without a flush of its own", async () => {
    const { deps, events } = fakes({ inStore: true, stock: 3 });
    // The gate is never opened: an attempt that waited for it would not end.
    const result = await attemptOrder(deps, 41);
    expect(result.outcome).toBe('settled');
    expect(result.settled?.items[0]?.status).toBe(ItemStatus.ORDERED);
    expect(events).toEqual(['begun', 'authorised', 'settled']);
  });

  it('ends an order its reservation settled (nothing to buy) only once that is durable', async () => {
    const { deps, flush, events } = fakes({ inStore: true, stock: 0 });
    let ended = false;
    const attempt = attemptOrder(deps, 41).then((result) => {
      ended = true;
      return result;
    });
    await settle();
    expect(ended).toBe(false);
    expect(events).toEqual(['begun', 'durable asked']);
    flush.open();
    const result = await attempt;
    expect(result.outcome).toBe('settled');
    expect(result.settled?.order.phase).toBe('settled');
    expect(result.settled?.items[0]?.status).not.toBe(ItemStatus.QUEUED);
    expect(events).toEqual(['begun', 'durable asked', 'durable']);
  });
});
