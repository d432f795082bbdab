// The store port's contract: moving an item by compare-and-set, with its stock and ledger entry, and the payment
// target the ledger gives. The same cases on whichever adapter the project names (SQLite or PostgreSQL), on a
// store of this file's own (test/helpers/store-contract.ts).
import { describe, expect, it, onTestFinished } from 'vitest';
import { ItemStatus as S } from '../../src/domain/item-status.js';
import {
  accepted,
  approval,
  cardId,
  giveUp,
  probe,
  reserveAll,
  shipping,
  stockOf,
  store,
  T0,
  WALDEN,
  useContractStore,
} from '../helpers/store-contract.js';
import { TEST_STORE } from '../helpers/test-store.js';

useContractStore();

/** Counts, until the test ends, the writes of order rows (a trigger of the test's own); the count so far. */
async function countOrderWrites(): Promise<() => Promise<number>> {
  if (TEST_STORE === 'postgres') {
    await probe.exec(`CREATE TABLE order_writes (n int NOT NULL); INSERT INTO order_writes VALUES (0);
      CREATE FUNCTION count_order_writes() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN UPDATE order_writes SET n = n + 1; RETURN NULL; END $$;
      CREATE TRIGGER count_order_writes AFTER UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION count_order_writes()`);
    onTestFinished(() =>
      probe.exec(`DROP TRIGGER count_order_writes ON orders; DROP FUNCTION count_order_writes();
        DROP TABLE order_writes`),
    );
  } else {
    await probe.exec(`CREATE TABLE order_writes (n INTEGER NOT NULL); INSERT INTO order_writes VALUES (0);
      CREATE TRIGGER count_order_writes AFTER UPDATE ON orders BEGIN UPDATE order_writes SET n = n + 1; END`);
    onTestFinished(() => probe.exec('DROP TRIGGER count_order_writes; DROP TABLE order_writes'));
  }
  return async () => Number(await probe.scalar('SELECT n FROM order_writes'));
}

describe(`the store's item moves and ledger on ${TEST_STORE}`, () => {
  it('moves an item only while it is as read (compare-and-set), with its stock and ledger entry', async () => {
    const walden = await stockOf(WALDEN);
    const orderId = await accepted([{ listingId: WALDEN, copies: 1 }]);
    await reserveAll(orderId, [{ listingId: WALDEN, copies: 1 }]);
    await store.processing.settle({ ...approval(orderId, 'unused'), ledger: null, now: T0 + 3000 });
    const item = (await store.items.getItem((await store.orders.get(orderId))!.items[0]!.orderItemId))!;
    expect(item).toMatchObject({ status: S.ORDERED, statusChangedAt: T0 + 3000, currency: 'USD' });
    const move = {
      orderItemId: item.orderItemId,
      from: S.ORDERED,
      fromChangedAt: item.statusChangedAt,
      to: S.CANCELLED_BY_BUYER,
      now: T0 + 4000,
      addShipcostCents: 0,
      extraShippingCents: null,
      shippingCompany: null,
      trackingId: null,
      returnStockOf: WALDEN,
      ledger: {
        entryKey: `void:item-${item.orderItemId}`,
        orderId,
        orderItemId: item.orderItemId,
        kind: 'void' as const,
        amountCents: 1100,
        currency: 'USD',
      },
    };
    expect(await store.items.applyMove({ ...move, fromChangedAt: item.statusChangedAt - 1 })).toEqual({
      kind: 'changed',
    });
    const moved = await store.items.applyMove(move);
    expect(moved).toMatchObject({
      kind: 'moved',
      item: { status: S.CANCELLED_BY_BUYER, updatedAt: T0 + 4000, statusChangedAt: T0 + 4000 },
    });
    expect((moved as { entryId: number | null }).entryId).toEqual(expect.any(Number));
    expect(await store.items.applyMove(move)).toEqual({ kind: 'changed' });
    expect(await stockOf(WALDEN)).toBe(walden);

    // The new entry moved the order's payment version on: pending until the gateway holds it.
    const target = (await store.ledger.paymentTarget(orderId))!;
    expect(target).toMatchObject({ orderId, cardId, currency: 'USD', appliedVersion: 0, version: 1 });
    expect(await store.reconcile.pendingPayments(100)).toContain(orderId);
    await store.ledger.markPaymentApplied(orderId, 1);
    await store.ledger.markPaymentApplied(orderId, 0);
    expect(await store.ledger.paymentTarget(orderId)).toMatchObject({ appliedVersion: 1, version: 1 });
    expect(await store.reconcile.pendingPayments(100)).not.toContain(orderId);
  });

  it("reads an order's payment target as authorize + extra shipping − voids − refunds at its version", async () => {
    const orderId = await accepted([{ listingId: WALDEN, copies: 2 }]);
    await reserveAll(orderId, [{ listingId: WALDEN, copies: 2 }]);
    expect(await store.ledger.paymentTarget(orderId)).toMatchObject({ amountCents: 0, version: 0 });
    const entry = { orderId, orderItemId: null, currency: 'USD' };
    await store.processing.settle({
      orderId,
      fromPhase: 'reserved',
      itemStatus: S.ORDERED,
      clearCharges: false,
      zeroTax: false,
      giveBack: [],
      ledger: { ...entry, entryKey: `authorize:o-${orderId}`, kind: 'authorize', amountCents: 2000 },
      now: T0,
    });
    // The authorisation is what the gateway already holds: no new version.
    expect(await store.ledger.paymentTarget(orderId)).toMatchObject({ amountCents: 2000, version: 0 });
    const [a, b] = (await store.orders.get(orderId))!.items;
    const move = (item: typeof a, to: number, kind: 'void' | 'extra_shipping', amountCents: number) =>
      store.items.applyMove({
        orderItemId: item!.orderItemId,
        from: item!.status as typeof S.ORDERED,
        fromChangedAt: item!.statusChangedAt,
        to: to as typeof S.ORDERED,
        now: T0 + 1,
        addShipcostCents: 0,
        extraShippingCents: null,
        shippingCompany: null,
        trackingId: null,
        returnStockOf: null,
        ledger: {
          ...entry,
          orderItemId: item!.orderItemId,
          entryKey: `${kind}:i-${item!.orderItemId}`,
          kind,
          amountCents,
        },
      });
    await move(a, S.CANCELLED_BY_BUYER, 'void', 1000);
    await move(b, S.CANCELLED_BY_BUYER, 'void', 1100);
    // Two entries, two versions; a target below zero is read as it is, never floored.
    expect(await store.ledger.paymentTarget(orderId)).toMatchObject({ amountCents: -100, version: 2 });
  });

  it('moves the payment version on when an order is given up on, and only then', async () => {
    const failed = await accepted([{ listingId: WALDEN, copies: 1 }]);
    const declined = await accepted([{ listingId: WALDEN, copies: 1 }]);
    expect(await store.processing.settle({ ...giveUp(failed), releasePayment: true })).toBe(true);
    expect(await store.processing.settle(giveUp(declined))).toBe(true);
    expect(await store.ledger.paymentTarget(failed)).toMatchObject({ amountCents: 0, version: 1 });
    expect(await store.ledger.paymentTarget(declined)).toMatchObject({ amountCents: 0, version: 0 });
    expect(await store.reconcile.pendingPayments(100)).toContain(failed);
    expect(await store.reconcile.pendingPayments(100)).not.toContain(declined);
    expect(await store.ledger.paymentTarget(999_999_999)).toBeNull();
  });

  it("writes the order's row once for a move with its event: its items' time and the event's sequence", async () => {
    const orderId = await accepted([{ listingId: WALDEN, copies: 1 }]);
    await reserveAll(orderId, [{ listingId: WALDEN, copies: 1 }]);
    await store.processing.settle({ ...approval(orderId, 'unused'), ledger: null, now: T0 + 3000 });
    const item = (await store.orders.get(orderId))!.items[0]!;
    const writes = await countOrderWrites();
    const moved = await store.items.applyMove({
      ...shipping(item, T0 + 4000),
      event: { eventId: `evt_once_${orderId}`, type: 'order.updated' },
    });

    expect(moved.kind).toBe('moved');
    expect(await writes()).toBe(1);
    const order = await probe.all<{ items_updated_at: number; event_seq: number; sequence: number }>(
      `SELECT o.items_updated_at, o.event_seq, e.sequence FROM orders o
         JOIN order_events e ON e.order_id = o.order_id AND e.event_id = ?
        WHERE o.order_id = ?`,
      `evt_once_${orderId}`,
      orderId,
    );
    expect(order.map((o) => [Number(o.items_updated_at), Number(o.event_seq), Number(o.sequence)])).toEqual([
      [T0 + 4000, 1, 1],
    ]);
  });

  it('keeps shipping details and extra shipping through moves that leave them out', async () => {
    const orderId = await accepted([{ listingId: WALDEN, copies: 1 }]);
    await reserveAll(orderId, [{ listingId: WALDEN, copies: 1 }]);
    const settle = { orderId, fromPhase: 'reserved' as const, clearCharges: false, zeroTax: false };
    await store.processing.settle({ ...settle, itemStatus: S.ORDERED, giveBack: [], ledger: null, now: T0 });
    const id = (await store.orders.get(orderId))!.items[0]!.orderItemId;
    const base = {
      orderItemId: id,
      returnStockOf: null,
      ledger: null,
      shippingCompany: null,
      trackingId: null,
    };
    await store.items.applyMove({
      ...base,
      from: S.ORDERED,
      fromChangedAt: T0,
      to: S.EXTRA_SHIPPING_REQUESTED,
      now: T0 + 1,
      addShipcostCents: 0,
      extraShippingCents: 250,
    });
    const accepted4 = await store.items.applyMove({
      ...base,
      from: S.EXTRA_SHIPPING_REQUESTED,
      fromChangedAt: T0 + 1,
      to: S.EXTRA_SHIPPING_ACCEPTED,
      now: T0 + 2,
      addShipcostCents: 250,
      extraShippingCents: null,
    });
    expect(accepted4).toMatchObject({ item: { shipcostCents: 350, extraShippingCents: 250 } });
    const shipped = await store.items.applyMove({
      ...base,
      from: S.EXTRA_SHIPPING_ACCEPTED,
      fromChangedAt: T0 + 2,
      to: S.SHIPPED,
      now: T0 + 3,
      addShipcostCents: 0,
      extraShippingCents: null,
      shippingCompany: 'DHL',
      trackingId: 'JD1',
    });
    expect(shipped).toMatchObject({
      item: { shippingCompany: 'DHL', trackingId: 'JD1', extraShippingCents: 250 },
    });
  });
});
