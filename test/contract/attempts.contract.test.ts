// The store port's contract: attempts on an order: the count and lease, reserving in the attempt, groups of
// attempts, races. The same cases on whichever adapter the project names (SQLite or PostgreSQL), on a store of
// this file's own (test/helpers/store-contract.ts).
import { describe, expect, it } from 'vitest';
import { ItemStatus as S } from '../../src/domain/item-status.js';
import type { AttemptStart, Settlement } from '../../src/store/port/store.port.js';
import {
  accepted,
  giveUp,
  MIDDLEMARCH,
  reservationFor,
  stockOf,
  store,
  T0,
  WALDEN,
  useContractStore,
} from '../helpers/store-contract.js';
import { TEST_STORE } from '../helpers/test-store.js';

useContractStore();

describe(`the store's processing attempts on ${TEST_STORE}`, () => {
  it('counts attempts of unsettled orders only; an attempt within the limit takes the lease', async () => {
    const orderId = await accepted([{ listingId: WALDEN, copies: 1 }]);
    const lease = (leaseUntil: number) => ({ leaseUntil, maxAttempts: 2 });
    const first = await store.processing.beginAttempt(orderId, lease(T0 + 10));
    expect(first!.order).toMatchObject({ attempts: 1, leaseUntil: T0 + 10 });
    // An attempt that is to reserve the order gets what pricing needs, read in its transaction.
    expect([...first!.catalog!.listings.keys()]).toEqual([WALDEN]);
    expect(first!.catalog!.listings.get(WALDEN)!.stock).toBe(await stockOf(WALDEN));
    expect(first!.catalog!.vendors.size).toBe(1);
    expect((await store.processing.beginAttempt(orderId, lease(T0 + 20)))!.order).toMatchObject({
      attempts: 2,
      leaseUntil: T0 + 20,
    });
    // Past the limit an attempt counts itself but leaves the lease to the last one that may be paying.
    const past = await store.processing.beginAttempt(orderId, lease(T0 + 30));
    expect(past!.order).toMatchObject({ attempts: 3, leaseUntil: T0 + 20 });
    expect(past!.catalog).toBeNull();
    expect((await store.orders.get(orderId))!.order).toMatchObject({ attempts: 3, leaseUntil: T0 + 20 });
    expect(await store.processing.beginAttempt(987_654, lease(T0))).toBeNull();
  });

  it('reserves in the attempt’s transaction when given a pricing; short of stock, it keeps the count only', async () => {
    const walden = await stockOf(WALDEN);
    const orderId = await accepted([{ listingId: WALDEN, copies: 2 }]);
    const lease = { leaseUntil: T0 + 10, maxAttempts: 5 };
    const short = await store.processing.beginAttempt(orderId, lease, (start) =>
      reservationFor(orderId, start.items, [{ listingId: WALDEN, copies: walden + 1 }]),
    );
    expect(short).toMatchObject({ reserved: 'short', order: { attempts: 1, phase: 'queued' } });
    expect(await store.orders.phaseOf(orderId)).toBe('queued');
    expect(await stockOf(WALDEN)).toBe(walden);
    expect((await store.orders.get(orderId))!.order.attempts).toBe(1);

    const applied = await store.processing.beginAttempt(orderId, lease, (start) => {
      expect(start.catalog.listings.get(WALDEN)!.stock).toBe(walden);
      return reservationFor(orderId, start.items, [{ listingId: WALDEN, copies: 2 }]);
    });
    expect(applied).toMatchObject({ reserved: 'applied', order: { attempts: 2 } });
    expect((await store.orders.get(orderId))!.order).toMatchObject({
      attempts: 2,
      leaseUntil: T0 + 10,
      phase: 'reserved',
    });
    expect(await stockOf(WALDEN)).toBe(walden - 2);
    // Reserved already: a later attempt neither reads a catalog nor prices.
    const later = await store.processing.beginAttempt(orderId, lease, () => {
      throw new Error('priced a reserved order');
    });
    expect(later).toMatchObject({ reserved: null, catalog: null, order: { attempts: 3, phase: 'reserved' } });
  });

  it('lets one of two attempts at once reserve: both count, the stock is taken once', async () => {
    const walden = await stockOf(WALDEN);
    const orderId = await accepted([{ listingId: WALDEN, copies: 2 }]);
    const lease = { leaseUntil: T0 + 10, maxAttempts: 5 };
    const attempts = await Promise.all(
      [1, 2].map(() =>
        store.processing.beginAttempt(orderId, lease, (start) =>
          reservationFor(orderId, start.items, [{ listingId: WALDEN, copies: 2 }]),
        ),
      ),
    );
    expect(attempts.map((a) => a!.reserved).sort()).toEqual(['applied', null]);
    expect(attempts.find((a) => a!.reserved === null)!.order.phase).toBe('reserved');
    expect((await store.orders.get(orderId))!.order).toMatchObject({ attempts: 2, phase: 'reserved' });
    expect(await stockOf(WALDEN)).toBe(walden - 2);
  });

  it('begins a group of attempts in one transaction, each as alone; the last copy goes to one of them', async () => {
    const lease = { leaseUntil: T0 + 10, maxAttempts: 5 };
    const middlemarch = await stockOf(MIDDLEMARCH);
    const walden = await stockOf(WALDEN);
    // Two orders want every copy of Middlemarch (one with Walden as well): the first in id order gets them.
    const first = await accepted([
      { listingId: WALDEN, copies: 1 },
      { listingId: MIDDLEMARCH, copies: middlemarch },
    ]);
    const second = await accepted([{ listingId: MIDDLEMARCH, copies: middlemarch }]);
    const reserved = await accepted([{ listingId: WALDEN, copies: 1 }]);
    await store.processing.beginAttempt(reserved, lease, (start) =>
      reservationFor(reserved, start.items, [{ listingId: WALDEN, copies: 1 }]),
    );
    const taking = (orderId: number) => (start: AttemptStart) => {
      return reservationFor(
        orderId,
        start.items,
        [...new Set(start.items.map((i) => i.listingId))].map((listingId) => ({
          listingId,
          copies: start.items.filter((i) => i.listingId === listingId).length,
        })),
      );
    };
    // Out of id order, with an order already reserved (not priced) and one that does not exist.
    const begun = await store.processing.beginAttemptMany([
      { orderId: second, lease, price: taking(second) },
      { orderId: 987_655, lease },
      {
        orderId: reserved,
        lease,
        price: () => {
          throw new Error('priced a reserved order');
        },
      },
      { orderId: first, lease, price: taking(first) },
    ]);
    expect(
      begun.map((b) => b && { reserved: b.reserved, phase: b.order.phase, attempts: b.order.attempts }),
    ).toEqual([
      { reserved: 'short', phase: 'queued', attempts: 1 },
      null,
      { reserved: null, phase: 'reserved', attempts: 2 },
      { reserved: 'applied', phase: 'queued', attempts: 1 },
    ]);
    expect(await store.orders.phaseOf(first)).toBe('reserved');
    expect(await store.orders.phaseOf(second)).toBe('queued');
    expect(await stockOf(MIDDLEMARCH)).toBe(0);
    expect(await stockOf(WALDEN)).toBe(walden - 2);
    expect((await store.orders.get(second))!.order.attempts).toBe(1);
    // Give the copies back for the cases after this one.
    const back = { listingId: MIDDLEMARCH, copies: middlemarch };
    expect(await store.processing.settle({ ...giveUp(first), fromPhase: 'reserved', giveBack: [back] })).toBe(
      true,
    );
    expect(await stockOf(MIDDLEMARCH)).toBe(middlemarch);
  });

  it('lets two groups of attempts take the same listings in opposite order of their orders without a deadlock', async () => {
    const BLEAK_HOUSE = 1002;
    const lease = { leaseUntil: T0 + 10, maxAttempts: 5 };
    const [walden, bleak] = [await stockOf(WALDEN), await stockOf(BLEAK_HOUSE)];
    const request = (orderId: number, listingId: number) => ({
      orderId,
      lease,
      price: (start: AttemptStart) => reservationFor(orderId, start.items, [{ listingId, copies: 1 }]),
    });
    for (let round = 0; round < 8; round += 1) {
      // By order id, the first group takes Walden then Bleak House, the second Bleak House then Walden.
      const ids = [];
      for (let n = 0; n < 4; n += 1) ids.push(await accepted([{ listingId: WALDEN, copies: 1 }]));
      const [a1, a2, b1, b2] = ids as [number, number, number, number];
      const groups = await Promise.allSettled([
        store.processing.beginAttemptMany([request(a1, WALDEN), request(a2, BLEAK_HOUSE)]),
        store.processing.beginAttemptMany([request(b1, BLEAK_HOUSE), request(b2, WALDEN)]),
      ]);
      expect(
        groups.map((g) => (g.status === 'fulfilled' ? g.value.map((b) => b!.reserved) : g.reason)),
      ).toEqual([
        ['applied', 'applied'],
        ['applied', 'applied'],
      ]);
      const giveBack = (orderId: number, listingId: number): Settlement => ({
        ...giveUp(orderId),
        fromPhase: 'reserved',
        giveBack: [{ listingId, copies: 1 }],
      });
      await store.processing.settleMany([
        giveBack(a1, WALDEN),
        giveBack(a2, BLEAK_HOUSE),
        giveBack(b1, BLEAK_HOUSE),
        giveBack(b2, WALDEN),
      ]);
      expect([await stockOf(WALDEN), await stockOf(BLEAK_HOUSE)]).toEqual([walden, bleak]);
    }
  });

  it('applies none of a group of attempts when one fails, and refuses an order twice', async () => {
    const lease = { leaseUntil: T0 + 10, maxAttempts: 5 };
    const walden = await stockOf(WALDEN);
    const [first, second] = [
      await accepted([{ listingId: WALDEN, copies: 1 }]),
      await accepted([{ listingId: WALDEN, copies: 1 }]),
    ];
    const take = (orderId: number) => (start: AttemptStart) =>
      reservationFor(orderId, start.items, [{ listingId: WALDEN, copies: 1 }]);
    await expect(
      store.processing.beginAttemptMany([
        { orderId: first, lease, price: take(first) },
        {
          orderId: second,
          lease,
          price: () => {
            throw new Error('pricing failed');
          },
        },
      ]),
    ).rejects.toThrow('pricing failed');
    await expect(
      store.processing.beginAttemptMany([
        { orderId: first, lease },
        { orderId: first, lease },
      ]),
    ).rejects.toThrow('twice');
    for (const orderId of [first, second])
      expect((await store.orders.get(orderId))!.order).toMatchObject({ attempts: 0, phase: 'queued' });
    expect(await stockOf(WALDEN)).toBe(walden);
    // Attempts asked for together are grouped (open-store.ts), each with its own answer; one that fails alone
    // fails for itself.
    const [a, b] = await Promise.allSettled([
      store.processing.beginAttempt(first, lease, take(first)),
      store.processing.beginAttempt(second, lease, () => {
        throw new Error('pricing failed');
      }),
    ]);
    expect(a).toMatchObject({ status: 'fulfilled', value: { reserved: 'applied' } });
    expect(b).toMatchObject({ status: 'rejected', reason: { message: 'pricing failed' } });
    expect(await stockOf(WALDEN)).toBe(walden - 1);
  });

  it('lets an attempt and a give-up race: either the order is reserved with its stock, or failed without', async () => {
    const walden = await stockOf(WALDEN);
    const orderId = await accepted([{ listingId: WALDEN, copies: 1 }]);
    const [attempt, failed] = await Promise.all([
      store.processing.beginAttempt(orderId, { leaseUntil: T0 + 60_000, maxAttempts: 5 }, (start) =>
        reservationFor(orderId, start.items, [{ listingId: WALDEN, copies: 1 }]),
      ),
      store.processing.settle({ ...giveUp(orderId), leaseFreeAt: T0 + 1000, releasePayment: true }),
    ]);
    const stored = (await store.orders.get(orderId))!;
    if (failed) {
      expect(attempt!.reserved).toBeNull();
      expect(stored.order.phase).toBe('settled');
      expect(stored.items.map((i) => i.status)).toEqual([S.FAILED]);
      expect(await stockOf(WALDEN)).toBe(walden);
    } else {
      expect(attempt!.reserved).toBe('applied');
      expect(stored.order.phase).toBe('reserved');
      expect(await stockOf(WALDEN)).toBe(walden - 1);
    }
  });
});
