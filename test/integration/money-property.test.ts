// Money exact in every ordering (issue 24), as a property: one order of two copies is driven through random
// rounds of item moves (93, 4, 90, 35, 14, 17, 24), some at once, with reconciliation passes among them, while
// the gateway fails calls, loses their answers, replays them late and answers them in an order fast-check's
// scheduler picks. Afterwards, once a pass has run with a working gateway: what the gateway holds = what the
// ledger says = the shares of the items still bought, and each copy that left the bought path (14, 17, 90)
// came back to stock exactly once.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOUGHT_STATUSES, ItemStatus as S } from '../../src/domain/item-status.js';
import type { PaymentGateway } from '../../src/payments/payment-gateway.js';
import { moveItem } from '../../src/services/item-lifecycle.js';
import { processOrder } from '../helpers/process-order.js';
import { reconcileOnce } from '../../src/services/reconcile.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { ledgerBalance } from '../helpers/ledger.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';

const LISTING = 2002;
const TARGETS = [S.EXTRA_SHIPPING_REQUESTED, S.EXTRA_SHIPPING_ACCEPTED, S.EXTRA_SHIPPING_REJECTED, S.SHIPPED];
const MOVES = [...TARGETS, S.ITEM_UNAVAILABLE, S.CANCELLED_BY_BUYER, S.REFUNDED] as const;
// Leaving the bought path this way returns the copy; a refund after shipping does not.
const RETURNS_STOCK: readonly number[] = [
  S.ITEM_UNAVAILABLE,
  S.CANCELLED_BY_BUYER,
  S.EXTRA_SHIPPING_REJECTED,
];

type Fault = 'none' | 'fail' | 'lost-answer' | 'replayed-late';

let service: TestService;
let buyer: Credentials;

beforeAll(async () => {
  service = await createTestService();
  await service.importCatalog(
    VENDORS,
    LISTINGS.map((l) => (l.listingId === LISTING ? { ...l, quantity: 100_000 } : l)),
  );
  buyer = await service.client('property buyer');
});
afterAll(() => service.close());

/** A bought order of two copies, through the worker's own function and the real sandbox gateway. */
async function boughtOrder(): Promise<{ orderId: number; itemIds: number[] }> {
  const body = orderBody(buyer.ccToken, { listings: [{ listingId: LISTING, quantity: 2 }] });
  const res = await signed(service.app, buyer, 'POST', '/v1/orders', body, {
    headers: { Prefer: 'respond-async' },
  });
  expect(res.status).toBe(200);
  const orderId = res.body.orderId as number;
  expect(await processOrder({ ...service.deps, maxAttempts: 5 }, orderId)).toBe('settled');
  const { items } = (await service.deps.store.orders.get(orderId))!;
  expect(items.map((i) => i.status)).toEqual([S.ORDERED, S.ORDERED]);
  return { orderId, itemIds: items.map((i) => i.orderItemId) };
}

/**
 * The real gateway behind fast-check's scheduler: every call waits for the scheduler to let it through, and
 * each takes the next fault of `faults` in turn. A replayed call runs once now and once more whenever the
 * scheduler lets the copy through, perhaps rounds later, after newer targets.
 */
function faultyGateway(s: fc.Scheduler, faults: readonly Fault[]): PaymentGateway {
  const inner = service.deps.payments;
  let calls = 0;
  return {
    authorize: (request) => inner.authorize(request),
    async settleTo(request) {
      const fault = faults[calls++ % faults.length]!;
      const through = () =>
        s.schedule(Promise.resolve(), `settleTo ${request.amountCents}@${request.version}`);
      if (fault === 'replayed-late') void through().then(() => inner.settleTo(request));
      await through();
      if (fault === 'fail') throw new Error('gateway unavailable');
      const result = await inner.settleTo(request);
      if (fault === 'lost-answer') throw new Error('gateway answer lost');
      return result;
    },
  };
}

const moveArb = fc.record({
  item: fc.integer({ min: 0, max: 1 }),
  to: fc.constantFrom(...MOVES),
  extraCents: fc.integer({ min: 1, max: 2_000 }),
});
const roundArb = fc.record({
  moves: fc.array(moveArb, { minLength: 1, maxLength: 3 }),
  reconcile: fc.boolean(),
});
const faultArb = fc.constantFrom<Fault>('none', 'fail', 'lost-answer', 'replayed-late');

describe('money under reordered, failed and repeated gateway calls', () => {
  it('when items move at random through a faulty gateway, then gateway = ledger = bought shares and stock comes back once per copy', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(roundArb, { minLength: 1, maxLength: 6 }),
        fc.array(faultArb, { minLength: 1, maxLength: 8 }),
        async (s, rounds, faults) => {
          const { orderId, itemIds } = await boughtOrder();
          const stockBefore = await service.stock(LISTING);
          const deps = { ...service.deps, payments: faultyGateway(s, faults) };
          for (const round of rounds) {
            const work: Promise<unknown>[] = round.moves.map((m) =>
              moveItem(deps, {
                orderItemId: itemIds[m.item]!,
                to: m.to,
                ...(m.to === S.EXTRA_SHIPPING_REQUESTED ? { extraShippingCents: m.extraCents } : {}),
              }),
            );
            if (round.reconcile) work.push(reconcileOnce(deps, Date.now()));
            await s.waitFor(Promise.allSettled(work));
          }
          // Late replays arrive now, after every newer target; then a pass with a working gateway.
          await s.waitIdle();
          await reconcileOnce(service.deps, Date.now());

          const { ledger, bought, gateway } = await ledgerBalance(service.probe, orderId);
          expect({ gateway, ledger }).toEqual({ gateway: bought, ledger: bought });
          const { items } = (await service.deps.store.orders.get(orderId))!;
          const stillBought = items.filter((i) => BOUGHT_STATUSES.includes(i.status as never)).length;
          const returned = items.filter((i) => RETURNS_STOCK.includes(i.status)).length;
          expect(await service.stock(LISTING)).toBe(stockBefore + returned);
          // Every copy is bought, refunded after shipping, or back in stock: none lost or returned twice.
          const refunded = items.filter((i) => i.status === S.REFUNDED).length;
          expect(stillBought + returned + refunded).toBe(2);
        },
      ),
      { numRuns: 40 },
    );
  }, 600_000);
});
