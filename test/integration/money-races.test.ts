// Money under races: whatever the interleaving of a paying worker, reconciliation and a lost job, an order that
// bought nothing holds no authorisation, and for every order the gateway, the ledger and the bought items agree.
// Each interleaving is forced: the payment processor blocks until the test lets it answer.
import { afterEach, describe, expect, it } from 'vitest';
import type { PaymentGateway } from '../../src/payments/payment-gateway.js';
import { paymentKey } from '../../src/payments/payment-gateway.js';
import { orderJobId } from '../../src/queue/order.queue.js';
import { processOrder, startAttempt, type ProcessOutcome } from '../../src/services/process-order.js';
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
    adjust: (key, step, delta) => inner.adjust(key, step, delta),
  };
  return { gateway, inside, open };
}

const attempt = (payments: PaymentGateway, orderId: number): Promise<ProcessOutcome> =>
  processOrder({ ...service.deps, payments, maxAttempts: service.config.MAX_PROCESS_ATTEMPTS }, orderId);

/** A processor that fails the call (a transient error): the attempt counts and the job would retry. */
const failingGateway = (): PaymentGateway => ({
  authorize: () => Promise.reject(new Error('processor unavailable')),
  adjust: (key, step, delta) => service.deps.payments.adjust(key, step, delta),
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

    it('when the attempt outlives its lease and reconciliation fails the order, then the authorisation that lands after is voided at once', async () => {
      const orderId = await orderAtLastAttempt();
      const { gateway, inside, open } = gatedGateway();
      const paying = attempt(gateway, orderId);
      await inside;
      const after = await pass(Date.now() + (LEASE_S + 1) * 1000);
      expect(after).toMatchObject({ ran: true, counts: { failed: 1 } });
      expect(await statuses(orderId)).toEqual([60, 60]);
      open();
      await paying;
      expect((await service.deps.store.payments.find(paymentKey(orderId)))?.status).toBe('authorized');
      await expectMoneyAgrees(orderId, 'nothing');
    });

    it('when the attempt dies between that late authorisation and its void, then the next reconciliation pass releases it', async () => {
      const orderId = await orderAtLastAttempt();
      // The last attempt reserves and goes to pay; its lease runs out and reconciliation fails the order.
      const processDeps = { ...service.deps, maxAttempts: max };
      expect(await startAttempt(processDeps, orderId)).toMatchObject({ kind: 'pay' });
      const now = Date.now() + (LEASE_S + 1) * 1000;
      expect(await pass(now)).toMatchObject({ ran: true, counts: { failed: 1 } });
      // The dying attempt's authorisation: the processor answered, nobody recorded or voided it.
      const stored = (await service.deps.store.orders.get(orderId))!.order;
      const key = paymentKey(orderId);
      const total = (await service.probe.scalar(
        'SELECT total_cents FROM orders WHERE order_id = ?',
        orderId,
      ))!;
      await service.deps.payments.authorize({
        key,
        cardId: stored.cardId,
        amountCents: total,
        currency: stored.currency,
      });
      expect((await ledgerBalance(service.probe, orderId)).gateway).toBe(total);
      expect(await pass(now + 1000)).toMatchObject({ ran: true, counts: { authorisationsReleased: 1 } });
      await expectMoneyAgrees(orderId, 'nothing');
      expect(await pass(now + 2000)).toMatchObject({ ran: true, counts: { authorisationsReleased: 0 } });
    });
  },
);

describe('a twin attempt (a stalled job run twice)', () => {
  it('when both pay with the order key, then one authorisation stays, accounted for once', async () => {
    await start(5);
    const orderId = await acceptedWithLostJob();
    const first = gatedGateway();
    const paying = attempt(first.gateway, orderId);
    await first.inside;
    expect(await attempt(service.deps.payments, orderId)).toBe('settled');
    first.open();
    expect(await paying).toBe('settled');
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
