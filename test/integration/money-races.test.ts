// Money under races: whatever the interleaving of a paying worker, reconciliation and a lost job, an order that
// bought nothing holds no authorisation, and for every order the gateway, the ledger and the bought items agree.
// Each interleaving is forced: the payment processor blocks until the test lets it answer.
import { afterEach, describe, expect, it } from 'vitest';
import type { PaymentGateway } from '../../src/payments/payment-gateway.js';
import { paymentKey } from '../../src/payments/payment-gateway.js';
import { orderJobId } from '../../src/queue/order.queue.js';
import { failOrder, startAttempt, type ProcessOutcome } from '../../src/services/process-order.js';
import { processOrder } from '../helpers/process-order.js';
import { moveItem } from '../../src/services/item-lifecycle.js';
import { runReconcilePass } from '../../src/services/reconcile.js';
import { LISTINGS, orderBody, VENDORS } from '../helpers/fixtures.js';
import { ledgerBalance } from '../helpers/ledger.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';

const WALDEN = 2002;
const LEASE_S = 30;

let service: TestService;
let buyer: Credentials;

afterEach(() => service?.close());

async function start(maxAttempts: number) {
  service = await createTestService({
    env: {
      MAX_PROCESS_ATTEMPTS: String(maxAttempts),
      ATTEMPT_LEASE_S: String(LEASE_S),
      QUEUED_STALE_AFTER_S: '1',
    },
  });
  await service.importCatalog(VENDORS, LISTINGS);
  buyer = await service.client('racing buyer');
}

/** An order accepted without waiting, whose job Redis then loses: only this test's attempts will run it. */
async function acceptedWithLostJob(): Promise<number> {
  const body = orderBody(buyer.ccToken, { listings: [{ listingId: WALDEN, quantity: 2 }] });
  const res = await signed(service.app, buyer, 'POST', '/v1/orders', body, {
    headers: { Prefer: 'respond-async' },
  });
  expect(res.status).toBe(200);
  const orderId = res.body.orderId as number;
  await service.deps.queue.queue.remove(orderJobId(orderId));
  return orderId;
}

/** The service's gateway behind a gate: `authorize` reaches the processor only once the test opens it. */
function gatedGateway() {
  const inner = service.deps.payments;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let entered!: () => void;
  const inside = new Promise<void>((resolve) => (entered = resolve));
  const gateway: PaymentGateway = {
    async authorize(request) {
      entered();
      await gate;
      return inner.authorize(request);
    },
    settleTo: (request) => inner.settleTo(request),
  };
  return { gateway, inside, open };
}

const attempt = (payments: PaymentGateway, orderId: number): Promise<ProcessOutcome> =>
  processOrder({ ...service.deps, payments, maxAttempts: service.config.MAX_PROCESS_ATTEMPTS }, orderId);

/** A processor that fails the call (a transient error): the attempt counts and the job would retry. */
const failingGateway = (): PaymentGateway => ({
  authorize: () => Promise.reject(new Error('processor unavailable')),
  settleTo: (request) => service.deps.payments.settleTo(request),
});

const pass = (at: number) => runReconcilePass(service.deps, { now: at });

const statuses = async (orderId: number) =>
  (await service.deps.store.orders.get(orderId))!.items.map((item) => item.status);

/** What the gateway holds = what the ledger says = the shares of the items that bought something. */
async function expectMoneyAgrees(orderId: number, bought: 'all' | 'nothing') {
  const { ledger, bought: shares, gateway } = await ledgerBalance(service.probe, orderId);
  expect({ ledger, gateway: gateway ?? 0 }).toEqual({ ledger: shares, gateway: shares });
  if (bought === 'nothing') expect(shares).toBe(0);
  else expect(shares).toBeGreaterThan(0);
}

describe.each([1, 5])(
  'with MAX_PROCESS_ATTEMPTS=%i, the last attempt paying while its job is lost',
  (max) => {
    /** An order whose job is lost, with every attempt but the last used up by processor errors. */
    async function orderAtLastAttempt(): Promise<number> {
      await start(max);
      const orderId = await acceptedWithLostJob();
      for (let i = 1; i < max; i += 1) {
        await expect(attempt(failingGateway(), orderId)).rejects.toThrow('processor unavailable');
      }
      return orderId;
    }

    it('when reconciliation runs while the attempt holds its lease, then it leaves the order to the attempt, which buys it', async () => {
      const orderId = await orderAtLastAttempt();
      const { gateway, inside, open } = gatedGateway();
      const paying = attempt(gateway, orderId);
      await inside;
      const during = await pass(Date.now() + 2_000);
      expect(during).toMatchObject({ ran: true, counts: { failed: 0, requeued: 0 } });
      open();
      expect(await paying).toBe('settled');
      expect(await statuses(orderId)).toEqual([5, 5]);
      await expectMoneyAgrees(orderId, 'all');
    });

    it('when the attempt outlives its lease and reconciliation fails the order, then the authorisation that lands after is declined', async () => {
      const orderId = await orderAtLastAttempt();
      const { gateway, inside, open } = gatedGateway();
      const paying = attempt(gateway, orderId);
      await inside;
      const after = await pass(Date.now() + (LEASE_S + 1) * 1000);
      expect(after).toMatchObject({ ran: true, counts: { failed: 1 } });
      expect(await statuses(orderId)).toEqual([60, 60]);
      open();
      await paying;
      expect((await service.deps.store.payments.find(paymentKey(orderId)))?.status).toBe('declined');
      expect(await statuses(orderId)).toEqual([60, 60]);
      await expectMoneyAgrees(orderId, 'nothing');
    });

    it('when the attempt dies after its authorisation and the gateway is down as reconciliation gives up on the order, then a pass days later still releases it', async () => {
      const orderId = await orderAtLastAttempt();
      // The last attempt reserves and is authorised, then dies before settling: nobody recorded it.
      const processDeps = { ...service.deps, maxAttempts: max };
      expect(await startAttempt(processDeps, orderId)).toMatchObject({ kind: 'pay' });
      const stored = (await service.deps.store.orders.get(orderId))!.order;
      const total = stored.totalCents!;
      await service.deps.payments.authorize({
        key: paymentKey(orderId),
        cardId: stored.cardId,
        amountCents: total,
        currency: stored.currency,
      });
      const now = Date.now() + (LEASE_S + 1) * 1000;
      const down = { ...service.deps, payments: unreachableSettle() };
      expect(await runReconcilePass(down, { now })).toMatchObject({
        ran: true,
        counts: { failed: 1, adjustmentsApplied: 0 },
      });
      expect((await ledgerBalance(service.probe, orderId)).gateway).toBe(total);
      const days = 10 * 24 * 3_600_000;
      expect(await pass(now + days)).toMatchObject({ ran: true, counts: { adjustmentsApplied: 1 } });
      await expectMoneyAgrees(orderId, 'nothing');
      expect(await pass(now + days + 1000)).toMatchObject({ ran: true, counts: { adjustmentsApplied: 0 } });
    });
  },
);

/** A processor whose authorisations work and whose adjustments cannot be reached. */
const unreachableSettle = (): PaymentGateway => ({
  authorize: (request) => service.deps.payments.authorize(request),
  settleTo: () => Promise.reject(new Error('processor unavailable')),
});

describe("the worker's failed handler giving up on an order without a lease while a stalled twin pays", () => {
  it('when the twin is authorised only after the order is given up on, then its authorisation is declined', async () => {
    await start(5);
    const orderId = await acceptedWithLostJob();
    const twin = gatedGateway();
    const paying = attempt(twin.gateway, orderId);
    await twin.inside;
    expect(await failOrder(service.deps, orderId)).toBe('failed');
    twin.open();
    await paying;
    expect(await statuses(orderId)).toEqual([60, 60]);
    await expectMoneyAgrees(orderId, 'nothing');
  });

  it('when the twin is authorised before the order is given up on, then the authorisation is released', async () => {
    await start(5);
    const orderId = await acceptedWithLostJob();
    // The processor answers at once; the twin is held between its authorisation and its settlement.
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let authorised!: () => void;
    const answered = new Promise<void>((resolve) => (authorised = resolve));
    const gateway: PaymentGateway = {
      async authorize(request) {
        const result = await service.deps.payments.authorize(request);
        authorised();
        await gate;
        return result;
      },
      settleTo: (request) => service.deps.payments.settleTo(request),
    };
    const paying = attempt(gateway, orderId);
    await answered;
    expect((await ledgerBalance(service.probe, orderId)).gateway).toBeGreaterThan(0);
    expect(await failOrder(service.deps, orderId)).toBe('failed');
    open();
    await paying;
    expect(await statuses(orderId)).toEqual([60, 60]);
    await expectMoneyAgrees(orderId, 'nothing');
  });
});

describe('a twin attempt (a stalled job run twice)', () => {
  it('when both pay with the order key, then one authorisation stays, accounted for once', async () => {
    await start(5);
    const orderId = await acceptedWithLostJob();
    const first = gatedGateway();
    const paying = attempt(first.gateway, orderId);
    await first.inside;
    expect(await attempt(service.deps.payments, orderId)).toBe('settled');
    first.open();
    expect(await paying).toBe('already-settled');
    expect(await statuses(orderId)).toEqual([5, 5]);
    await expectMoneyAgrees(orderId, 'all');
    expect(
      await service.probe.scalar(
        "SELECT count(*) FROM ledger_entries WHERE order_id = ? AND kind = 'authorize'",
        orderId,
      ),
    ).toBe(1);
  });
});

describe('payment adjustments of one order reaching the gateway in any order', () => {
  /** An ORDERED order of two copies whose first item the seller asked 5.00 of extra shipping for. */
  async function extraShippingRequested() {
    await start(5);
    const orderId = await acceptedWithLostJob();
    expect(await attempt(service.deps.payments, orderId)).toBe('settled');
    const itemId = (await service.deps.store.orders.get(orderId))!.items[0]!.orderItemId;
    const asked = await moveItem(service.deps, { orderItemId: itemId, to: 93, extraShippingCents: 500 });
    expect(asked.kind).toBe('moved');
    return { orderId, itemId };
  }

  it('when the acceptance of extra shipping cannot reach the gateway and the item is then cancelled, then after reconciliation the gateway holds only the other item', async () => {
    const { orderId, itemId } = await extraShippingRequested();
    const down = { ...service.deps, payments: unreachableSettle() };
    expect((await moveItem(down, { orderItemId: itemId, to: 4 })).kind).toBe('moved');
    expect((await moveItem(service.deps, { orderItemId: itemId, to: 17 })).kind).toBe('moved');
    expect(await pass(Date.now())).toMatchObject({ ran: true, counts: { adjustmentsApplied: 0 } });
    await expectMoneyAgrees(orderId, 'all');
    expect(await statuses(orderId)).toEqual([17, 5]);
  });

  it('when the acceptance reaches the gateway only after the cancellation did, then the late call changes nothing', async () => {
    const { orderId, itemId } = await extraShippingRequested();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const slow: PaymentGateway = {
      authorize: (request) => service.deps.payments.authorize(request),
      async settleTo(request) {
        entered();
        await gate;
        return service.deps.payments.settleTo(request);
      },
    };
    const accepting = moveItem({ ...service.deps, payments: slow }, { orderItemId: itemId, to: 4 });
    await inside;
    expect((await moveItem(service.deps, { orderItemId: itemId, to: 17 })).kind).toBe('moved');
    open();
    expect((await accepting).kind).toBe('moved');
    await expectMoneyAgrees(orderId, 'all');
    expect(await pass(Date.now())).toMatchObject({ ran: true, counts: { adjustmentsApplied: 0 } });
    await expectMoneyAgrees(orderId, 'all');
  });

  it('when the gateway says a payment is not authorised yet, then the adjustment stays pending until it is', async () => {
    const { orderId, itemId } = await extraShippingRequested();
    let authorised = false;
    const asynchronous: PaymentGateway = {
      authorize: (request) => service.deps.payments.authorize(request),
      settleTo: async (request) => (authorised ? service.deps.payments.settleTo(request) : 'not-authorised'),
    };
    const deps = { ...service.deps, payments: asynchronous };
    expect((await moveItem(deps, { orderItemId: itemId, to: 4 })).kind).toBe('moved');
    expect(await service.deps.store.reconcile.pendingPayments(100)).toContain(orderId);
    expect(await runReconcilePass(deps, { now: Date.now() })).toMatchObject({
      counts: { adjustmentsApplied: 0 },
    });
    expect(await service.deps.store.reconcile.pendingPayments(100)).toContain(orderId);
    authorised = true;
    expect(await runReconcilePass(deps, { now: Date.now() })).toMatchObject({
      counts: { adjustmentsApplied: 1 },
    });
    await expectMoneyAgrees(orderId, 'all');
  });
});
