// The store port's contract: clients and their cards, the catalog read for pricing, and migrations run twice.
// The same cases on whichever adapter the project names (SQLite or PostgreSQL), on a store of this file's own
// (test/helpers/store-contract.ts).
import { describe, expect, it } from 'vitest';
import { addCard, createClient, rollClientSecret } from '../../src/services/client-keys.js';
import { MIDDLEMARCH, store, T0, useContractStore } from '../helpers/store-contract.js';
import { TEST_STORE } from '../helpers/test-store.js';

useContractStore();

describe(`the store's clients and catalog on ${TEST_STORE}`, () => {
  it('migrates idempotently: a second run applies nothing', async () => {
    expect(await store.migrate()).toEqual([]);
    await store.ping();
    expect(store.kind).toBe(TEST_STORE);
  });

  it('keeps clients and cards, finds them by key and token, and disables a client', async () => {
    const client = await createClient(store.clients, 'Acme', T0);
    expect(await store.clients.findByAccessKey(client.accessKey)).toEqual(client);
    // The token comes back once, from addCard: the store keeps only its hash.
    const { token, ...card } = await addCard(store.clients, client.clientId, true, T0);
    expect(await store.clients.findCard(token)).toEqual(card);
    expect(await store.clients.findCardById(card.cardId)).toEqual({ ...card, declines: true, active: true });
    expect(await store.clients.disable(client.accessKey)).toMatchObject({ disabled: true });
    expect(await store.clients.disable('AK-none')).toBeNull();
    expect(await store.clients.findCard('cc_none')).toBeNull();
  });

  it('enables a disabled client, and rolls its secret keeping the previous one, sealed, until its expiry', async () => {
    const client = await createClient(store.clients, 'Rolling', T0);
    expect(client).toMatchObject({ secretVersion: 1, previous: null });
    await store.clients.disable(client.accessKey);
    expect(await store.clients.enable(client.accessKey)).toMatchObject({ disabled: false });
    expect(await store.clients.enable('AK-none')).toBeNull();

    const rolled = await rollClientSecret(store.clients, client.accessKey, 60_000, T0);
    expect(rolled).toMatchObject({
      secretVersion: 2,
      previous: { secretKey: client.secretKey, expiresAt: T0 + 60_000 },
    });
    expect(rolled!.secretKey).not.toBe(client.secretKey);
    expect(await store.clients.findByAccessKey(client.accessKey)).toEqual(rolled);
    // A second roll drops the first secret: only the last two are kept.
    const again = await rollClientSecret(store.clients, client.accessKey, 0, T0 + 1);
    expect(again).toMatchObject({
      secretVersion: 3,
      previous: { secretKey: rolled!.secretKey, expiresAt: T0 + 1 },
    });
    expect(await rollClientSecret(store.clients, 'AK-none', 0, T0)).toBeNull();
  });

  it('loads listings and vendors with their rates for pricing; an unknown listing is absent', async () => {
    const catalog = await store.catalog.loadForPricing([MIDDLEMARCH, 999_999]);
    expect(catalog.listings.get(MIDDLEMARCH)).toMatchObject({ vendorId: 501, priceCents: 1250 });
    expect(catalog.listings.has(999_999)).toBe(false);
    expect(catalog.vendors.get(501)).toMatchObject({
      country: 'GBR',
      currency: 'GBP',
      active: true,
      rates: { S: { domestic: { firstCents: 350, additionalCents: 100, minDays: 2, maxDays: 5 } } },
    });
    expect(await store.catalog.vendorExists(501)).toBe(true);
    expect(await store.catalog.vendorExists(999)).toBe(false);
    expect(await store.catalog.deactivateVendor(999)).toBe(false);
  });
});
