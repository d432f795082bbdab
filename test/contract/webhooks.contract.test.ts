// The store port's webhooks and order events: the same cases on whichever adapter the project names.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { ItemStatus as S } from '../../src/domain/item-status.js';
import { addCard, createClient } from '../../src/services/client-keys.js';
import { toOrderResponse } from '../../src/services/order-view.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/port/store.port.js';
import { LISTINGS, VENDORS } from '../helpers/fixtures.js';
import { openProbe, TEST_STORE, testStoreEnv, type TestStoreEnv } from '../helpers/test-store.js';

const T0 = Date.parse('2026-11-01T10:00:00.000Z');
const WALDEN = 2002;

let dir: string;
let testStore: TestStoreEnv;
let store: Store;
let seq = 0;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-webhooks-'));
  testStore = await testStoreEnv(dir);
  store = await openStore(loadConfig(testStore.env), 'test', () => undefined);
  await store.catalog.importCatalog(VENDORS, LISTINGS);
});

afterAll(async () => {
  await store?.close();
  await testStore?.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function newClient(): Promise<{ clientId: number; cardId: number }> {
  const { clientId } = await createClient(store.clients, `client ${(seq += 1)}`, T0);
  return { clientId, cardId: (await addCard(store.clients, clientId, false, T0)).cardId };
}

const address = { name: 'Ada', address1: '1 Main St', city: 'X', country: 'USA', zipcode: '1', phone: '5' };

/** An accepted order of copies of Walden, one line per entry of `lines` (its quantity and maxPrice). */
async function acceptedOrder(
  client: { clientId: number; cardId: number },
  lines: { quantity: number; maxPriceCents: number | null }[],
) {
  seq += 1;
  const result = await store.orders.accept({
    clientId: client.clientId,
    requestId: `req-${seq}`,
    requestHash: `hash-${seq}`,
    referenceId: `ref-${seq}`,
    domain: 'bookmarket.com',
    currency: 'USD',
    shippingMode: 'S',
    shipAddr: address,
    billAddr: address,
    cardId: client.cardId,
    totalMaxPriceCents: null,
    createdAt: T0 + seq,
    items: lines.flatMap(({ quantity, maxPriceCents }, lineNo) =>
      Array.from({ length: quantity }, () => ({
        lineNo,
        listingId: WALDEN,
        vendorId: 601,
        title: 'Walden',
        isbn: '9780691096124',
        lineQuantity: quantity,
        maxPriceCents,
        minDays: 3,
        maxDays: 7,
        costCents: 1000,
      })),
    ),
  });
  if (result.kind !== 'created') throw new Error(result.kind);
  return result;
}

/** An accepted order of two copies of Walden, reserved: the worker's next step is a settlement. */
async function reservedOrder(client: { clientId: number; cardId: number }): Promise<number> {
  const result = await acceptedOrder(client, [{ quantity: 2, maxPriceCents: null }]);
  const { items } = (await store.orders.get(result.orderId))!;
  const priced = items.map((i) => ({ ...i, shipcostCents: 100, taxCents: 0, status: S.QUEUED }));
  await store.processing.reserve({
    orderId: result.orderId,
    items: priced,
    take: [{ listingId: WALDEN, copies: 2 }],
    phase: 'reserved',
    taxCents: null,
    taxModel: null,
    totalCents: 2200,
    now: T0,
  });
  return result.orderId;
}

const settle = (orderId: number, eventId?: string) =>
  store.processing.settle({
    orderId,
    fromPhase: 'reserved',
    itemStatus: S.ORDERED,
    clearCharges: false,
    zeroTax: false,
    giveBack: [],
    ledger: null,
    now: T0 + 1000,
    ...(eventId ? { event: { eventId, type: 'order.updated' as const } } : {}),
  });

const pendingOf = async (webhookId: number) =>
  (await store.webhooks.unenqueued(1000)).filter((a) => deliveryWebhook.get(a.deliveryId) === webhookId);
const deliveryWebhook = new Map<number, number>();

/** Every pending, not yet handed delivery with its webhook and event, remembered for later lookups. */
async function outbox() {
  const attempts = await store.webhooks.unenqueued(1000);
  const targets = await Promise.all(attempts.map((a) => store.webhooks.target(a.deliveryId)));
  for (const t of targets) deliveryWebhook.set(t!.deliveryId, t!.webhook.webhookId);
  return targets.map((t) => t!);
}

describe(`webhooks and order events on ${TEST_STORE}`, () => {
  it('adds, lists and removes webhooks, each with its own secret that the store gives back alike', async () => {
    const client = await newClient();
    const a = await store.webhooks.add({ clientId: client.clientId, url: 'https://a.example/', now: T0 });
    const b = await store.webhooks.add({ clientId: client.clientId, url: 'https://b.example/', now: T0 });
    expect(a).toMatchObject({
      clientId: client.clientId,
      url: 'https://a.example/',
      active: true,
      failing: false,
    });
    expect(a.secret).toMatch(/^whsec_[0-9a-f]{64}$/);
    expect(b.secret).not.toBe(a.secret);
    expect(await store.webhooks.list(client.clientId)).toEqual([
      { webhookId: a.webhookId, clientId: client.clientId, url: a.url, active: true, failing: false },
      { webhookId: b.webhookId, clientId: client.clientId, url: b.url, active: true, failing: false },
    ]);
    expect(await store.webhooks.remove(a.webhookId, T0)).toMatchObject({
      webhookId: a.webhookId,
      active: false,
    });
    expect(await store.webhooks.find(a.webhookId)).toMatchObject({ active: false });
    expect(await store.webhooks.remove(999_999_999, T0)).toBeNull();
    expect(await store.webhooks.find(999_999_999)).toBeNull();

    const orderId = await reservedOrder(client);
    await settle(orderId, 'evt_secret');
    const [target] = (await outbox()).filter((t) => t.event.orderId === orderId);
    expect(target!.webhook).toEqual({ ...b, failing: false });
  });

  it('records an event with a change only when asked, numbered per order, holding the order as it then stood', async () => {
    const client = await newClient();
    const other = await newClient();
    const live = await store.webhooks.add({
      clientId: client.clientId,
      url: 'https://live.example/',
      now: T0,
    });
    const gone = await store.webhooks.add({
      clientId: client.clientId,
      url: 'https://gone.example/',
      now: T0,
    });
    await store.webhooks.remove(gone.webhookId, T0);
    await store.webhooks.add({ clientId: other.clientId, url: 'https://other.example/', now: T0 });
    const silent = await reservedOrder(client);
    expect(await settle(silent)).toBe(true);
    const orderId = await reservedOrder(client);
    expect(await settle(orderId, 'evt_settled')).toBe(true);
    const afterSettle = (await store.orders.get(orderId))!;
    const item = afterSettle.items[0]!;
    const moved = await store.items.applyMove({
      orderItemId: item.orderItemId,
      from: S.ORDERED,
      fromChangedAt: item.statusChangedAt,
      to: S.SHIPPED,
      now: T0 + 2000,
      addShipcostCents: 0,
      extraShippingCents: null,
      shippingCompany: 'DHL',
      trackingId: 'JD1',
      returnStockOf: null,
      ledger: null,
      event: { eventId: 'evt_shipped', type: 'order.updated' },
    });
    expect(moved.kind).toBe('moved');
    const afterMove = (await store.orders.get(orderId))!;

    const targets = await outbox();
    expect(targets.filter((t) => t.event.orderId === silent)).toEqual([]);
    const mine = targets.filter((t) => t.event.orderId === orderId);
    expect(mine.map((t) => [t.webhook.webhookId, t.event.eventId, t.event.sequence])).toEqual([
      [live.webhookId, 'evt_settled', 1],
      [live.webhookId, 'evt_shipped', 2],
    ]);
    const [settled, shipped] = mine.map((t) => t.event);
    expect(settled).toMatchObject({ type: 'order.updated', clientId: client.clientId, createdAt: T0 + 1000 });
    expect(toOrderResponse(settled!.order, settled!.items)).toEqual(
      toOrderResponse(afterSettle.order, afterSettle.items),
    );
    expect(toOrderResponse(shipped!.order, shipped!.items)).toEqual(
      toOrderResponse(afterMove.order, afterMove.items),
    );
    expect(mine.every((t) => t.state === 'pending' && t.attempts === 0)).toBe(true);
  });

  it('records the event of a reservation that rejects an item, holding the order as reserved', async () => {
    const client = await newClient();
    await store.webhooks.add({ clientId: client.clientId, url: 'https://reserve.example/', now: T0 });
    const { orderId } = await acceptedOrder(client, [
      { quantity: 1, maxPriceCents: null },
      { quantity: 1, maxPriceCents: 1 },
    ]);
    const [bought, tooDear] = (await store.orders.get(orderId))!.items;
    expect(
      await store.processing.reserve({
        orderId,
        items: [
          { ...bought!, shipcostCents: 100, taxCents: 0, status: S.QUEUED },
          { ...tooDear!, shipcostCents: 0, taxCents: 0, status: S.MAX_PRICE_EXCEEDED },
        ],
        take: [{ listingId: WALDEN, copies: 1 }],
        phase: 'reserved',
        taxCents: null,
        taxModel: null,
        totalCents: 1100,
        now: T0 + 500,
        event: { eventId: 'evt_rejected', type: 'order.updated' },
      }),
    ).toBe('applied');
    const reserved = (await store.orders.get(orderId))!;
    expect(reserved.items.map((i) => i.status)).toEqual([S.QUEUED, S.MAX_PRICE_EXCEEDED]);
    const [target] = (await outbox()).filter((t) => t.event.orderId === orderId);
    expect(target!.event).toMatchObject({ eventId: 'evt_rejected', sequence: 1, createdAt: T0 + 500 });
    expect(toOrderResponse(target!.event.order, target!.event.items)).toEqual(
      toOrderResponse(reserved.order, reserved.items),
    );
  });

  it('signals new deliveries to a watcher once their transaction commits, where the store can (PostgreSQL)', async () => {
    if (!store.webhooks.watchOutbox) {
      expect(TEST_STORE).toBe('sqlite');
      return;
    }
    let signals = 0;
    const watch = store.webhooks.watchOutbox(() => (signals += 1));
    // Every (re)connect signals once, for what came while nobody listened.
    await expect.poll(() => signals).toBeGreaterThan(0);
    const before = signals;
    const client = await newClient();
    await store.webhooks.add({ clientId: client.clientId, url: 'https://signal.example/', now: T0 });
    expect(await settle(await reservedOrder(client), 'evt_signalled')).toBe(true);
    await expect.poll(() => signals).toBeGreaterThan(before);
    await watch.close();
  });

  it('hands attempts over once, finds lost ones, and records each attempt once', async () => {
    const client = await newClient();
    const hook = await store.webhooks.add({ clientId: client.clientId, url: 'https://h.example/', now: T0 });
    await settle(await reservedOrder(client), `evt_outbox_${seq}`);
    await outbox();
    const [first] = await pendingOf(hook.webhookId);
    expect(first).toEqual({
      deliveryId: expect.any(Number),
      webhookId: hook.webhookId,
      attempt: 1,
      dueAt: 0,
    });
    const { deliveryId } = first!;

    await store.webhooks.markEnqueued([first!], T0 + 10);
    expect(await pendingOf(hook.webhookId)).toEqual([]);
    expect((await store.webhooks.overdue(T0 + 10, 1000)).map((a) => a.deliveryId)).not.toContain(deliveryId);
    expect(await store.webhooks.overdue(T0 + 11, 1000)).toContainEqual(first);

    const retry = { kind: 'retry' as const, retryAt: T0 + 5000, error: 'answered 500' };
    expect(await store.webhooks.recordAttempt(deliveryId, 1, retry, T0 + 20)).toBe(true);
    expect(await store.webhooks.recordAttempt(deliveryId, 1, retry, T0 + 20)).toBe(false);
    expect(await pendingOf(hook.webhookId)).toEqual([
      { deliveryId, webhookId: hook.webhookId, attempt: 2, dueAt: T0 + 5000 },
    ]);
    await store.webhooks.markEnqueued(
      [{ deliveryId, webhookId: hook.webhookId, attempt: 1, dueAt: 0 }],
      T0 + 30,
    );
    expect(await pendingOf(hook.webhookId)).toHaveLength(1);

    const gaveUp = { kind: 'gave-up' as const, error: 'answered 503' };
    expect(await store.webhooks.recordAttempt(deliveryId, 2, gaveUp, T0 + 40)).toBe(true);
    expect(await store.webhooks.find(hook.webhookId)).toMatchObject({ failing: true });
    expect(await store.webhooks.target(deliveryId)).toMatchObject({ state: 'failed', attempts: 2 });
    expect(await store.webhooks.recordAttempt(deliveryId, 3, { kind: 'delivered' }, T0 + 50)).toBe(false);

    await settle(await reservedOrder(client), `evt_outbox_${seq}`);
    await outbox();
    const [next] = await pendingOf(hook.webhookId);
    expect(await store.webhooks.recordAttempt(next!.deliveryId, 1, { kind: 'delivered' }, T0 + 60)).toBe(
      true,
    );
    expect(await store.webhooks.find(hook.webhookId)).toMatchObject({ failing: false });
    expect(await store.webhooks.target(next!.deliveryId)).toMatchObject({ state: 'delivered', attempts: 1 });
  });

  it('replays the events of the client since a time, and removing a webhook drops what it still had pending', async () => {
    const client = await newClient();
    const hook = await store.webhooks.add({ clientId: client.clientId, url: 'https://r.example/', now: T0 });
    await settle(await reservedOrder(client), `evt_replay_a_${seq}`);
    await outbox();
    const [pending] = await pendingOf(hook.webhookId);
    await store.webhooks.recordAttempt(pending!.deliveryId, 1, { kind: 'delivered' }, T0);

    expect(await store.webhooks.replay(hook.webhookId, T0 + 1000, T0 + 9000)).toBe(1);
    expect(await store.webhooks.replay(hook.webhookId, T0 + 1001, T0 + 9000)).toBe(0);
    await outbox();
    const again = await pendingOf(hook.webhookId);
    expect(again).toEqual([
      { deliveryId: expect.any(Number), webhookId: hook.webhookId, attempt: 1, dueAt: 0 },
    ]);
    expect((await store.webhooks.target(again[0]!.deliveryId))!.event.eventId).toMatch(/^evt_replay_a_/);

    await store.webhooks.remove(hook.webhookId, T0 + 9500);
    expect(await pendingOf(hook.webhookId)).toEqual([]);
    expect(await store.webhooks.target(again[0]!.deliveryId)).toMatchObject({ state: 'dropped' });
    expect(await store.webhooks.replay(hook.webhookId, 0, T0 + 9900)).toBe(0);
  });

  it('claims an attempt once while its claim lasts, and a remove ends what a claim may do', async () => {
    const client = await newClient();
    const hook = await store.webhooks.add({ clientId: client.clientId, url: 'https://c.example/', now: T0 });
    await settle(await reservedOrder(client), `evt_claim_${seq}`);
    await outbox();
    const [first] = await pendingOf(hook.webhookId);
    const { deliveryId } = first!;

    expect(await store.webhooks.claim(deliveryId, 2, T0, T0 + 5000)).toEqual({ kind: 'stale' });
    const claimed = await store.webhooks.claim(deliveryId, 1, T0, T0 + 5000);
    expect(claimed).toMatchObject({
      kind: 'claimed',
      target: { deliveryId, state: 'pending', attempts: 0, webhook: { webhookId: hook.webhookId } },
    });
    if (claimed.kind !== 'claimed') throw new Error(claimed.kind);
    expect(claimed.target.webhook.secret).toBe(hook.secret);
    expect(claimed.target.event.eventId).toMatch(/^evt_claim_/);
    // A twin of the same attempt waits for the claim to end.
    expect(await store.webhooks.claim(deliveryId, 1, T0 + 4999, T0 + 9999)).toEqual({ kind: 'stale' });
    expect(await store.webhooks.claimedAttempts(hook.webhookId, T0 + 4999)).toBe(1);
    expect(await store.webhooks.claimedAttempts(hook.webhookId, T0 + 5000)).toBe(0);

    const retry = { kind: 'retry' as const, retryAt: T0 + 100, error: 'answered 500' };
    expect(await store.webhooks.recordAttempt(deliveryId, 1, retry, T0 + 10)).toBe(true);
    expect(await store.webhooks.claimedAttempts(hook.webhookId, T0 + 10)).toBe(0);
    expect((await store.webhooks.claim(deliveryId, 2, T0 + 20, T0 + 5020)).kind).toBe('claimed');

    // The remove drops the delivery under its claim; the attempt's outcome is not recorded but its claim ends.
    await store.webhooks.remove(hook.webhookId, T0 + 30);
    expect(await store.webhooks.claimedAttempts(hook.webhookId, T0 + 30)).toBe(1);
    expect(await store.webhooks.recordAttempt(deliveryId, 2, { kind: 'delivered' }, T0 + 40)).toBe(false);
    expect(await store.webhooks.claimedAttempts(hook.webhookId, T0 + 40)).toBe(0);
    expect(await store.webhooks.target(deliveryId)).toMatchObject({ state: 'dropped' });
    expect(await store.webhooks.claim(deliveryId, 2, T0 + 50, T0 + 5050)).toEqual({ kind: 'stale' });
  });

  it('drops, never claims, a delivery recorded for a webhook that was removed meanwhile', async () => {
    const client = await newClient();
    const hook = await store.webhooks.add({ clientId: client.clientId, url: 'https://d.example/', now: T0 });
    await settle(await reservedOrder(client), `evt_late_${seq}`);
    await outbox();
    const [pending] = await pendingOf(hook.webhookId);
    await store.webhooks.remove(hook.webhookId, T0);
    // What an event whose transaction began before the remove and committed after it leaves (PostgreSQL).
    const probe = openProbe(testStore.env);
    try {
      await probe.exec(
        `UPDATE webhook_deliveries SET state = 'pending', finished_at = NULL WHERE delivery_id = ${pending!.deliveryId}`,
      );
    } finally {
      await probe.close();
    }
    expect(await pendingOf(hook.webhookId)).toEqual([pending]);

    expect(await store.webhooks.claim(pending!.deliveryId, 1, T0 + 10, T0 + 5010)).toEqual({
      kind: 'dropped',
    });
    expect(await store.webhooks.target(pending!.deliveryId)).toMatchObject({ state: 'dropped', attempts: 0 });
    expect(await store.webhooks.claimedAttempts(hook.webhookId, T0 + 10)).toBe(0);
    expect(await pendingOf(hook.webhookId)).toEqual([]);
  });
});
