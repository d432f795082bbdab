// The store port's contract: clients and their cards, the catalog read for pricing, and migrations run twice.
// The same cases on whichever adapter the project names (SQLite or PostgreSQL), on a store of this file's own
// (test/helpers/store-contract.ts).
import { describe, expect, it } from 'vitest';
import { addCard, createClient } from '../../src/services/client-keys.js';
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
