// The store port's contract: reserving stock all or nothing and settling an order once, alone or several in one
// transaction. The same cases on whichever adapter the project names (SQLite or PostgreSQL), on a store of this
// file's own (test/helpers/store-contract.ts).
import { describe, expect, it } from 'vitest';
import { ItemStatus as S } from '../../src/domain/item-status.js';
import { LISTINGS } from '../helpers/fixtures.js';
import {
  accepted,
  approval,
  giveUp,
  MIDDLEMARCH,
  probe,
  reservationFor,
  reserveAll,
  stockOf,
  store,
  T0,
  WALDEN,
  useContractStore,
} from '../helpers/store-contract.js';
import { TEST_STORE } from '../helpers/test-store.js';

useContractStore();

describe(`the store's reservations and settlements on ${TEST_STORE}`, () => {
  it('carries an order reserved by an attempt that died on to one settlement, the stock taken once', async () => {
    const walden = await stockOf(WALDEN);
    const orderId = await accepted([{ listingId: WALDEN, copies: 1 }]);
    const lease = { leaseUntil: T0 + 10, maxAttempts: 5 };
    await store.processing.beginAttempt(orderId, lease, (start) =>
      reservationFor(orderId, start.items, [{ listingId: WALDEN, copies: 1 }]),
    );
    // The attempt's process died here: the next attempt finds the order reserved and goes on to pay.
    const next = await store.processing.beginAttempt(orderId, lease, () => {
      throw new Error('priced a reserved order');
    });
    expect(next).toMatchObject({ reserved: null, catalog: null, order: { phase: 'reserved', attempts: 2 } });
    const approve = approval(orderId, `authorize:died-${orderId}`);
    expect(await store.processing.settle(approve)).toBe(true);
    expect(await store.processing.settle(approve)).toBe(false);
    expect(await store.processing.ledgerHas(`authorize:died-${orderId}`)).toBe(true);
    expect((await store.orders.get(orderId))!.items.map((i) => i.status)).toEqual([S.ORDERED]);
    expect(await stockOf(WALDEN)).toBe(walden - 1);
  });

  it('settles under a lease guard only once no attempt holds the lease beyond the given time', async () => {
    const orderId = await accepted([{ listingId: WALDEN, copies: 1 }]);
    await store.processing.beginAttempt(orderId, { leaseUntil: T0 + 60_000, maxAttempts: 5 });
    const fail = giveUp(orderId);
    expect(await store.processing.settle({ ...fail, leaseFreeAt: T0 + 59_999 })).toBe(false);
    expect(await store.orders.phaseOf(orderId)).toBe('queued');
    expect(await store.processing.settle({ ...fail, leaseFreeAt: T0 + 60_000 })).toBe(true);
    expect(await store.orders.phaseOf(orderId)).toBe('settled');
    expect(await store.processing.ledgerHas(`authorize:order-${orderId}`)).toBe(false);
  });

  it('settles several orders in one transaction, each as settle would, or none when one fails', async () => {
    const walden = await stockOf(WALDEN);
    const first = await accepted([{ listingId: WALDEN, copies: 1 }]);
    const second = await accepted([{ listingId: WALDEN, copies: 1 }]);
    const giveBack = { ...giveUp(first), giveBack: [{ listingId: WALDEN, copies: 1 }] };
    const refused = {
      ...giveUp(second),
      ledger: {
        entryKey: `decline:negative-${second}`,
        orderId: second,
        orderItemId: null,
        kind: 'decline' as const,
        amountCents: -1,
        currency: 'USD',
      },
    };
    await expect(store.processing.settleMany([giveBack, refused])).rejects.toThrow();
    expect([await store.orders.phaseOf(first), await store.orders.phaseOf(second)]).toEqual([
      'queued',
      'queued',
    ]);
    expect(await stockOf(WALDEN)).toBe(walden);
    // Out of id order and one order twice: each result in its place, the twin applied after the first.
    expect(await store.processing.settleMany([giveUp(second), giveBack, giveUp(second)])).toEqual([
      true,
      true,
      false,
    ]);
    expect([await store.orders.phaseOf(first), await store.orders.phaseOf(second)]).toEqual([
      'settled',
      'settled',
    ]);
    expect(await stockOf(WALDEN)).toBe(walden + 1);
    const third = await accepted([{ listingId: WALDEN, copies: 1 }]);
    // Settlements asked for together are grouped (open-store.ts): the twin still finds the order settled.
    expect(
      await Promise.all([store.processing.settle(giveUp(third)), store.processing.settle(giveUp(third))]),
    ).toEqual([true, false]);
  });

  it('reserves all or nothing: a listing short of stock rolls the whole reservation back', async () => {
    const walden = await stockOf(WALDEN);
    const middlemarch = await stockOf(MIDDLEMARCH);
    const orderId = await accepted([
      { listingId: MIDDLEMARCH, copies: 1 },
      { listingId: WALDEN, copies: 1 },
    ]);
    const short = await reserveAll(orderId, [
      { listingId: MIDDLEMARCH, copies: middlemarch + 1 },
      { listingId: WALDEN, copies: 1 },
    ]);
    expect(short).toBe('short');
    expect([await stockOf(MIDDLEMARCH), await stockOf(WALDEN)]).toEqual([middlemarch, walden]);
    expect(await store.orders.phaseOf(orderId)).toBe('queued');
    expect((await store.orders.get(orderId))!.items.every((i) => i.shipcostCents === 0)).toBe(true);

    const take = [
      { listingId: MIDDLEMARCH, copies: 1 },
      { listingId: WALDEN, copies: 1 },
    ];
    expect(await reserveAll(orderId, take)).toBe('applied');
    expect([await stockOf(MIDDLEMARCH), await stockOf(WALDEN)]).toEqual([middlemarch - 1, walden - 1]);
    const stored = (await store.orders.get(orderId))!;
    expect(stored.order).toMatchObject({ phase: 'reserved', totalCents: 2200 });
    expect(stored.items.map((i) => [i.status, i.shipcostCents])).toEqual([
      [S.QUEUED, 100],
      [S.QUEUED, 100],
    ]);
    expect(await reserveAll(orderId, take)).toBe('not-queued');
    expect(await stockOf(WALDEN)).toBe(walden - 1);
  });

  it('lets exactly one of two concurrent reservations of the last copies through', async () => {
    await store.catalog.importCatalog(
      [],
      [{ ...LISTINGS.find((l) => l.listingId === MIDDLEMARCH)!, quantity: 2 }],
    );
    const orders = [
      await accepted([{ listingId: MIDDLEMARCH, copies: 2 }]),
      await accepted([{ listingId: MIDDLEMARCH, copies: 2 }]),
    ];
    const results = await Promise.all(
      orders.map((id) => reserveAll(id, [{ listingId: MIDDLEMARCH, copies: 2 }])),
    );
    expect(results.sort()).toEqual(['applied', 'short']);
    expect(await stockOf(MIDDLEMARCH)).toBe(0);
  });

  it('settles only from the phase it expects, moving the QUEUED items and writing the ledger once', async () => {
    const walden = await stockOf(WALDEN);
    const orderId = await accepted([{ listingId: WALDEN, copies: 2 }]);
    await reserveAll(orderId, [{ listingId: WALDEN, copies: 2 }]);
    const decline = {
      orderId,
      fromPhase: 'reserved' as const,
      itemStatus: S.CREDIT_CARD_REJECTED,
      clearCharges: true,
      zeroTax: true,
      giveBack: [{ listingId: WALDEN, copies: 2 }],
      ledger: {
        entryKey: `decline:order-${orderId}`,
        orderId,
        orderItemId: null,
        kind: 'decline' as const,
        amountCents: 2200,
        currency: 'USD',
      },
      now: T0 + 2000,
    };
    expect(await store.processing.settle({ ...decline, fromPhase: 'queued' })).toBe(false);
    expect(await store.orders.phaseOf(orderId)).toBe('reserved');
    expect(await store.processing.settle(decline)).toBe(true);
    expect(await store.processing.settle(decline)).toBe(false);
    const stored = (await store.orders.get(orderId))!;
    expect(stored.order.phase).toBe('settled');
    expect(stored.items.map((i) => [i.status, i.costCents, i.shipcostCents, i.updatedAt])).toEqual([
      [S.CREDIT_CARD_REJECTED, 1000, 0, T0 + 2000],
      [S.CREDIT_CARD_REJECTED, 1000, 0, T0 + 2000],
    ]);
    expect(await stockOf(WALDEN)).toBe(walden);
    expect(await probe.scalar('SELECT count(*) FROM ledger_entries WHERE order_id = ?', orderId)).toBe(1);
    expect(await store.processing.ledgerHas(`decline:order-${orderId}`)).toBe(true);
    const again = await store.processing.beginAttempt(orderId, { leaseUntil: T0, maxAttempts: 5 });
    expect(again!.order.attempts).toBe(0);
    expect(again!.catalog).toBeNull();
  });
});
