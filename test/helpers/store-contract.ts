// What the store contract's files share (test/contract/*.contract.test.ts): a fresh store of the file's own, migrated,
// with the fixtures' catalog and one client with a card, a raw-SQL probe on it, and the orders, reservations and
// settlements the cases build. Each file calls useContractStore() once; the bindings below are live, set by its
// beforeAll.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { ItemStatus as S } from '../../src/domain/item-status.js';
import { addCard, createClient } from '../../src/services/client-keys.js';
import { openStore } from '../../src/store/open-store.js';
import type {
  ItemMoveWrite,
  NewOrder,
  Reservation,
  Settlement,
  Store,
  StoredItem,
} from '../../src/store/port/store.port.js';
import { LISTINGS, VENDORS } from './fixtures.js';
import type { Probe } from './store.probe.js';
import { openProbe, testStoreEnv, type TestStoreEnv } from './test-store.js';

export const T0 = Date.parse('2026-11-01T10:00:00.000Z');
export const MIDDLEMARCH = 1001; // 3 copies, vendor 501
export const WALDEN = 2002; // 50 copies, vendor 601

export let dir: string;
let testStore: TestStoreEnv;
export let store: Store;
export let probe: Probe;
export let clientId: number;
export let cardId: number;
let requestSeq = 0;

/** The environment of this file's store: what a process (or the admin CLI) on the same store is given. */
export const contractEnv = (): Record<string, string | undefined> => testStore.env;

/** Opens this file's store before its cases and drops it after them. */
export function useContractStore(): void {
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-contract-'));
    testStore = await testStoreEnv(dir);
    store = await openStore(loadConfig(testStore.env), 'test', () => undefined);
    probe = openProbe(testStore.env);
    await store.catalog.importCatalog(VENDORS, LISTINGS);
    const client = await createClient(store.clients, 'contract', T0);
    clientId = client.clientId;
    cardId = (await addCard(store.clients, clientId, false, T0)).cardId;
  });

  afterAll(async () => {
    await probe?.close();
    await store?.close();
    await testStore?.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  });
}

export const address = {
  name: 'Ada',
  address1: '1 Main St',
  city: 'Springfield',
  provstate: 'CA',
  country: 'USA',
  zipcode: '12345',
  phone: '555',
};

export function newOrder(
  lines: { listingId: number; copies: number }[],
  overrides: Partial<NewOrder> = {},
): NewOrder {
  requestSeq += 1;
  return {
    clientId,
    requestId: `req-${requestSeq}`,
    requestHash: `hash-${requestSeq}`,
    referenceId: null,
    domain: 'bookmarket.com',
    currency: 'USD',
    shippingMode: 'S',
    shipAddr: address,
    billAddr: { ...address, address2: null },
    cardId,
    totalMaxPriceCents: null,
    createdAt: T0 + requestSeq,
    items: lines.flatMap(({ listingId, copies }, lineNo) =>
      Array.from({ length: copies }, () => ({
        lineNo,
        listingId,
        vendorId: LISTINGS.find((l) => l.listingId === listingId)!.vendorId,
        title: 'A title',
        isbn: '9780000000000',
        lineQuantity: copies,
        maxPriceCents: null,
        minDays: 2,
        maxDays: 5,
        costCents: 1000,
      })),
    ),
    ...overrides,
  };
}

export async function accepted(lines: { listingId: number; copies: number }[]): Promise<number> {
  const result = await store.orders.accept(newOrder(lines));
  if (result.kind !== 'created') throw new Error(`expected a new order, got ${result.kind}`);
  return result.orderId;
}

export const stockOf = (listingId: number) =>
  probe.scalar('SELECT stock FROM listings WHERE listing_id = ?', listingId);

/** A reservation that buys every item of the order at 1000 + 100 shipping, taking `copies` of `listingId`. */
export const reservationFor = (
  orderId: number,
  items: readonly StoredItem[],
  take: { listingId: number; copies: number }[],
): Reservation => ({
  orderId,
  items: items.map((i) => ({
    orderItemId: i.orderItemId,
    costCents: 1000,
    shipcostCents: 100,
    taxCents: 0,
    minDays: 2,
    maxDays: 5,
    status: S.QUEUED,
  })),
  take,
  phase: 'reserved',
  taxCents: null,
  taxModel: null,
  totalCents: 1100 * items.length,
  now: T0 + 1000,
});

/** Giving up on a queued order: its items FAILED, nothing bought. */
export const giveUp = (orderId: number): Settlement => ({
  orderId,
  fromPhase: 'queued',
  itemStatus: S.FAILED,
  clearCharges: true,
  zeroTax: true,
  giveBack: [],
  ledger: null,
  now: T0,
});

/** Settling a reserved order as bought, its authorisation in the ledger under `entryKey`. */
export const approval = (orderId: number, entryKey: string): Settlement => ({
  orderId,
  fromPhase: 'reserved',
  itemStatus: S.ORDERED,
  clearCharges: false,
  zeroTax: false,
  giveBack: [],
  ledger: {
    entryKey,
    orderId,
    orderItemId: null,
    kind: 'authorize',
    amountCents: 1100,
    currency: 'USD',
  },
  now: T0 + 2000,
});

export async function reserveAll(orderId: number, take: { listingId: number; copies: number }[]) {
  const { items } = (await store.orders.get(orderId))!;
  return store.processing.reserve(reservationFor(orderId, items, take));
}

/** Shipping an ORDERED item at `now` with UPS, nothing else changed. */
export const shipping = (item: StoredItem, now: number): ItemMoveWrite => ({
  orderItemId: item.orderItemId,
  from: S.ORDERED,
  fromChangedAt: item.statusChangedAt,
  to: S.SHIPPED,
  now,
  addShipcostCents: 0,
  extraShippingCents: null,
  shippingCompany: 'UPS',
  trackingId: '1Z',
  returnStockOf: null,
  ledger: null,
});
