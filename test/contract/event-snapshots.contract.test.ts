// The store port's order events of a large order: each delivered and replayed with the order as GET showed it
// after its change, while the store keeps per event only what changed (event_item_states), on either adapter.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { ItemStatus as S } from '../../src/domain/item-status.js';
import { addCard, createClient } from '../../src/services/client-keys.js';
import { toOrderResponse, type OrderResponse } from '../../src/services/order-view.js';
import { openStore } from '../../src/store/open-store.js';
import type { DeliveryTarget, Store } from '../../src/store/port/store.port.js';
import { DELIVERY_TARGET_SQL } from '../../src/store/postgres/webhooks.postgres.js';
import { ITEM_STATE_COLUMNS } from '../../src/store/shared/event-snapshot.js';
import {
  approval,
  accepted,
  clientId,
  dir,
  newOrder,
  probe,
  reservationFor,
  shipping,
  store,
  T0,
  useContractStore,
  WALDEN,
} from '../helpers/store-contract.js';
import { LISTINGS, VENDORS } from '../helpers/fixtures.js';
import { openProbe, TEST_STORE, testStoreEnv } from '../helpers/test-store.js';

useContractStore();

const ITEMS = 250;
const STATE_COLUMNS = ['order_id', 'order_item_id', 'sequence', ...ITEM_STATE_COLUMNS];
// What the store holds for an event: its row's snapshot, and the item states written at its sequence.
const SNAPSHOT_BYTES = TEST_STORE === 'postgres' ? 'pg_column_size(snapshot)' : 'length(snapshot)';
const STATE_BYTES =
  TEST_STORE === 'postgres'
    ? 'pg_column_size(s.*)'
    : STATE_COLUMNS.map((c) => `coalesce(length(s.${c}), 0)`).join(' + ');

async function storedBytes(orderId: number, sequence: number): Promise<number> {
  const snapshot = await probe.scalar(
    `SELECT ${SNAPSHOT_BYTES} FROM order_events WHERE order_id = ? AND sequence = ?`,
    orderId,
    sequence,
  );
  const states = await probe.scalar(
    `SELECT coalesce(sum(${STATE_BYTES}), 0) FROM event_item_states s WHERE s.order_id = ? AND s.sequence = ?`,
    orderId,
    sequence,
  );
  return Number(snapshot) + Number(states);
}

const getView = async (orderId: number): Promise<OrderResponse> => {
  const { order, items } = (await store.orders.get(orderId))!;
  return toOrderResponse(order, items);
};

/** The pending, not yet handed deliveries of `orderId`'s events, in sequence order. */
async function pendingTargets(orderId: number): Promise<DeliveryTarget[]> {
  const attempts = await store.webhooks.unenqueued(10_000);
  const targets = await Promise.all(attempts.map((a) => store.webhooks.target(a.deliveryId)));
  return targets
    .map((t) => t!)
    .filter((t) => t.event.orderId === orderId)
    .sort((a, b) => a.event.sequence - b.event.sequence);
}

const delivered = (targets: DeliveryTarget[]) =>
  targets.map((t) => [t.event.sequence, toOrderResponse(t.event.order, t.event.items)]);

/** Ships item `index` of the order, recording an event `eventId` (in this file's store unless `on` is given). */
async function ship(orderId: number, index: number, now: number, eventId: string, on: Store = store) {
  const item = (await on.orders.get(orderId))!.items[index]!;
  const moved = await on.items.applyMove({
    ...shipping(item, now),
    shippingCompany: 'DHL',
    trackingId: `JD${index}`,
    event: { eventId, type: 'order.updated' },
  });
  expect(moved.kind).toBe('moved');
}

/** Reserves every item of the order (the last one rejected, priced anew), then settles it, each with an event. */
async function reserveAndSettle(orderId: number, tag: string) {
  const { items } = (await store.orders.get(orderId))!;
  const reservation = reservationFor(orderId, items, [{ listingId: WALDEN, copies: items.length - 1 }]);
  const last = reservation.items.length - 1;
  reservation.items[last] = { ...reservation.items[last]!, status: S.MAX_PRICE_EXCEEDED, shipcostCents: 0 };
  const event = { eventId: `evt_${tag}_reserved`, type: 'order.updated' as const };
  expect(await store.processing.reserve({ ...reservation, event })).toBe('applied');
  const afterReserve = await getView(orderId);
  const settled = await store.processing.settle({
    ...approval(orderId, `auth-${tag}`),
    event: { eventId: `evt_${tag}_settled`, type: 'order.updated' },
  });
  expect(settled).toBe(true);
  return [afterReserve, await getView(orderId)];
}

/** A new client of its own with one new order of `copies` copies of WALDEN. */
async function clientWithOrder(name: string, copies: number) {
  const { clientId: client } = await createClient(store.clients, name, T0);
  const created = await store.orders.accept(newOrder([{ listingId: WALDEN, copies }], { clientId: client }));
  if (created.kind !== 'created') throw new Error(created.kind);
  return { client, orderId: created.orderId };
}

describe(`event snapshots of a large order on ${TEST_STORE}`, () => {
  it('delivers and replays each event of a 250-item order with every item as GET showed it then', async () => {
    await probe.exec(`UPDATE listings SET stock = 10000 WHERE listing_id = ${WALDEN}`);
    const hook = await store.webhooks.add({ clientId, url: 'https://big.example/', now: T0 });
    const orderId = await accepted([{ listingId: WALDEN, copies: ITEMS }]);
    const seen = await reserveAndSettle(orderId, 'big');
    for (const [k, index] of [0, 1, 2].entries()) {
      await ship(orderId, index, T0 + 3000 + k, `evt_big_shipped_${index}`);
      seen.push(await getView(orderId));
    }
    const expected = seen.map((view, k) => [k + 1, view]);

    const targets = await pendingTargets(orderId);
    expect(delivered(targets)).toEqual(expected);
    for (const t of targets) {
      await store.webhooks.recordAttempt(t.deliveryId, 1, { kind: 'delivered' }, T0 + 5000);
    }
    expect(await store.webhooks.replay(hook.webhookId, 0, T0 + 6000)).toBeGreaterThanOrEqual(expected.length);
    expect(delivered(await pendingTargets(orderId))).toEqual(expected);

    // An event that changed one item stores a small fraction of what the whole order takes.
    const whole = Buffer.byteLength(
      JSON.stringify({ order: targets[1]!.event.order, items: targets[1]!.event.items }),
    );
    expect(whole).toBeGreaterThan(50_000);
    for (const sequence of [3, 4, 5]) expect(await storedBytes(orderId, sequence)).toBeLessThan(whole / 50);
  });

  it('delivers an event stored whole, as versions before item states wrote it', async () => {
    const { clientId: client } = await createClient(store.clients, 'legacy', T0);
    await store.webhooks.add({ clientId: client, url: 'https://legacy.example/', now: T0 });
    const created = await store.orders.accept(
      newOrder([{ listingId: WALDEN, copies: 3 }], { clientId: client }),
    );
    if (created.kind !== 'created') throw new Error(created.kind);
    const { orderId } = created;
    const [, settled] = await reserveAndSettle(orderId, 'legacy');
    const { order, items } = (await store.orders.get(orderId))!;
    const whole = {
      order: {
        orderId,
        createdAt: order.createdAt,
        currency: order.currency,
        taxCents: order.taxCents,
        taxModel: order.taxModel,
        referenceId: order.referenceId,
      },
      items: items.map((i) => ({
        orderItemId: i.orderItemId,
        orderId,
        lineNo: i.lineNo,
        listingId: i.listingId,
        vendorId: i.vendorId,
        title: i.title,
        isbn: i.isbn,
        lineQuantity: i.lineQuantity,
        minDays: i.minDays,
        maxDays: i.maxDays,
        costCents: i.costCents,
        shipcostCents: i.shipcostCents,
        status: i.status,
        updatedAt: i.updatedAt,
        shippingCompany: i.shippingCompany,
        trackingId: i.trackingId,
      })),
    };
    await probe.all(
      'UPDATE order_events SET snapshot = ? WHERE order_id = ? AND sequence = 2 RETURNING event_no',
      JSON.stringify(whole),
      orderId,
    );
    await probe.all('DELETE FROM event_item_states WHERE order_id = ? RETURNING sequence', orderId);

    const [, target] = await pendingTargets(orderId);
    expect(toOrderResponse(target!.event.order, target!.event.items)).toEqual(settled);
  });

  it('prunes the item states only pruned events read, and the events left are delivered as they were', async () => {
    const { client, orderId } = await clientWithOrder('pruned', 5);
    await reserveAndSettle(orderId, 'pruned');
    const seen: OrderResponse[] = [];
    for (const [k, index] of [0, 1].entries()) {
      await ship(orderId, index, T0 + 3000 + k, `evt_pruned_shipped_${index}`);
      seen.push(await getView(orderId));
    }
    const states = () => probe.scalar('SELECT count(*) FROM event_item_states WHERE order_id = ?', orderId);
    // Reserved: 5 states; settled: the 4 bought (the rejected one stays as it was); each shipment: 1.
    expect(Number(await states())).toBe(11);

    // The reservation's and the settlement's events (no delivery names them) are older than the cut.
    while ((await store.retention.pruneEvents(T0 + 2500, 100)) > 0);
    // Left: item 0 as shipped (event 3); item 1 as settled (read by event 3) and as shipped (event 4); items 2
    // and 3 as settled; item 4 as rejected at the reservation (its latest state).
    expect(Number(await states())).toBe(6);

    const hook = await store.webhooks.add({ clientId: client, url: 'https://pruned.example/', now: T0 });
    expect(await store.webhooks.replay(hook.webhookId, 0, T0 + 6000)).toBe(2);
    expect(delivered(await pendingTargets(orderId))).toEqual([
      [3, seen[0]],
      [4, seen[1]],
    ]);
  });

  it('prunes events out of order (a later one first) and leaves each event left delivered as it was', async () => {
    const { client, orderId } = await clientWithOrder('out of order', 5);
    // Events 1 (reserved: 5 states) and 2 (settled: the 4 bought), then 3, 4, 5: items 0, 1, 2 shipped.
    const seen = new Map<number, OrderResponse>(
      (await reserveAndSettle(orderId, 'ooo')).map((v, k) => [k + 1, v]),
    );
    for (const index of [0, 1, 2]) {
      await ship(orderId, index, T0 + 3000 + index, `evt_ooo_shipped_${index}`);
      seen.set(3 + index, await getView(orderId));
    }
    // Their age is not their order (clocks of several hosts, an event a delivery held): 4, 2, 5, 1, 3.
    for (const [age, sequence] of [4, 2, 5, 1, 3].entries())
      await probe.exec(
        `UPDATE order_events SET created_at = ${1000 + age} WHERE order_id = ${orderId} AND sequence = ${sequence}`,
      );
    const states = async () =>
      Number(await probe.scalar('SELECT count(*) FROM event_item_states WHERE order_id = ?', orderId));
    const deliveredNow = async () => {
      const hook = await store.webhooks.add({ clientId: client, url: 'https://ooo.example/', now: T0 });
      await store.webhooks.replay(hook.webhookId, 0, T0 + 6000);
      const targets = delivered(await pendingTargets(orderId));
      // Delivered, and the webhook gone: nothing names the events any more.
      await store.webhooks.remove(hook.webhookId, T0 + 6000);
      await probe.exec(`DELETE FROM webhook_deliveries WHERE webhook_id = ${hook.webhookId}`);
      return targets;
    };
    const left = (...sequences: number[]) => sequences.map((sequence) => [sequence, seen.get(sequence)]);

    while ((await store.retention.pruneEvents(1002, 1)) > 0);
    expect(await deliveredNow()).toEqual(left(1, 3, 5));
    // Each item's states its events left read, and its latest: 2 + 3 + 3 + 2 + 1.
    expect(await states()).toBe(11);

    await ship(orderId, 3, T0 + 4000, 'evt_ooo_shipped_3');
    seen.set(6, await getView(orderId));
    while ((await store.retention.pruneEvents(1004, 1)) > 0);
    expect(await deliveredNow()).toEqual(left(3, 6));
    expect(await states()).toBe(8);

    // The last of the old events gone: each item keeps its latest state alone, nothing stale.
    while ((await store.retention.pruneEvents(1005, 1)) > 0);
    expect(await deliveredNow()).toEqual(left(6));
    expect(await states()).toBe(5);
  });

  it('upgrades a store of the version before: its events are delivered whole, and new ones store what changed', async () => {
    const older = await testStoreEnv(fs.mkdtempSync(path.join(dir, 'older-')));
    const upgraded: Store = await openStore(loadConfig(older.env), 'test', () => undefined);
    const raw = openProbe(older.env);
    try {
      await upgraded.catalog.importCatalog(VENDORS, LISTINGS);
      const owner = (await createClient(upgraded.clients, 'older', T0)).clientId;
      const card = (await addCard(upgraded.clients, owner, false, T0)).cardId;
      await upgraded.webhooks.add({ clientId: owner, url: 'https://older.example/', now: T0 });
      const created = await upgraded.orders.accept(
        newOrder([{ listingId: WALDEN, copies: 3 }], { clientId: owner, cardId: card }),
      );
      if (created.kind !== 'created') throw new Error(created.kind);
      const { orderId } = created;
      const { items } = (await upgraded.orders.get(orderId))!;
      const reservation = reservationFor(orderId, items, [{ listingId: WALDEN, copies: 3 }]);
      const event = { eventId: 'evt_older_settled', type: 'order.updated' as const };
      expect(await upgraded.processing.reserve(reservation)).toBe('applied');
      expect(await upgraded.processing.settle({ ...approval(orderId, 'auth-older'), event })).toBe(true);
      const settled = (await upgraded.orders.get(orderId))!;
      // What the version before stored: the whole order in the event's row, and no item states.
      const whole = JSON.stringify({ order: settled.order, items: settled.items });
      const version = TEST_STORE === 'postgres' ? 18 : 16;
      await raw.all(
        'UPDATE order_events SET snapshot = ? WHERE order_id = ? RETURNING event_no',
        whole,
        orderId,
      );
      await raw.exec(
        `DROP TABLE event_item_states; DELETE FROM schema_migrations WHERE version = ${version};`,
      );
      expect(await upgraded.migrate()).toEqual([version]);

      await ship(orderId, 0, T0 + 3000, 'evt_older_shipped', upgraded);
      const shipped = (await upgraded.orders.get(orderId))!;
      const attempts = await upgraded.webhooks.unenqueued(100);
      const targets = await Promise.all(attempts.map((a) => upgraded.webhooks.target(a.deliveryId)));
      expect(delivered(targets.map((t) => t!).sort((a, b) => a.event.sequence - b.event.sequence))).toEqual([
        [1, toOrderResponse(settled.order, settled.items)],
        [2, toOrderResponse(shipped.order, shipped.items)],
      ]);
    } finally {
      await raw.close();
      await upgraded.close();
      await older.drop();
    }
  });
});

if (TEST_STORE === 'postgres') {
  describe('a delivery of a large order on postgres', () => {
    it("reads its event's items in the statement that reads it, each table once", async () => {
      await probe.exec(`UPDATE listings SET stock = 10000 WHERE listing_id = ${WALDEN}`);
      const hook = await store.webhooks.add({ clientId, url: 'https://cost.example/', now: T0 });
      const orderId = await accepted([{ listingId: WALDEN, copies: ITEMS }]);
      await reserveAndSettle(orderId, 'cost');
      await ship(orderId, 0, T0 + 3000, 'evt_cost_shipped');
      // As autovacuum leaves a store in service: with statistics of both tables.
      await probe.exec('ANALYZE order_items, event_item_states');
      const sql = `${DELIVERY_TARGET_SQL} WHERE d.delivery_id = ?`;
      const targets = (await pendingTargets(orderId)).filter((t) => t.webhook.webhookId === hook.webhookId);
      expect(targets).toHaveLength(3);
      for (const { deliveryId } of targets) {
        const [row] = await probe.all<{ items: unknown[] }>(sql, deliveryId);
        expect(row!.items).toHaveLength(ITEMS);
        const [explained] = await probe.all<{ 'QUERY PLAN': [{ Plan: Record<string, number> }] }>(
          `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`,
          deliveryId,
        );
        const plan = explained!['QUERY PLAN'][0].Plan;
        // A seek per item and its heap row read ~4 buffers an item (~1,000 here); each table read once, a few pages.
        expect(plan['Shared Hit Blocks']! + plan['Shared Read Blocks']!).toBeLessThan(ITEMS / 2);
      }
    });
  });
}
