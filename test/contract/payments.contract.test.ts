// The store port's contract: the sandbox processor's authorisations and versioned targets, concurrent asks and
// races. The same cases on whichever adapter the project names (SQLite or PostgreSQL), on a store of this file's
// own (test/helpers/store-contract.ts).
import { describe, expect, it } from 'vitest';
import { cardId, store, T0, useContractStore } from '../helpers/store-contract.js';
import { TEST_STORE } from '../helpers/test-store.js';

useContractStore();

describe(`the store's payments on ${TEST_STORE}`, () => {
  it('records authorisations asked at once each under its key, the first outcome of a key for both asks', async () => {
    const ask = (key: string, amountCents: number, approved: boolean) =>
      store.payments.authorizeOnce({ key, cardId, currency: 'USD', amountCents, approved, now: T0 });
    expect(
      await Promise.all([
        ask('at-once-1', 100, true),
        ask('at-once-2', 200, false),
        ask('at-once-3', 300, true),
        ask('at-once-1', 999, false),
      ]),
    ).toEqual([
      { status: 'authorized', amountCents: 100 },
      { status: 'declined', amountCents: 200 },
      { status: 'authorized', amountCents: 300 },
      { status: 'authorized', amountCents: 100 },
    ]);
  });

  it("records the sandbox processor's first outcome per key and brings it to versioned targets", async () => {
    const first = { key: 'pay-1', cardId, currency: 'USD', amountCents: 5000, approved: true, now: T0 };
    const target = { key: 'pay-1', cardId, currency: 'USD', now: T0 };
    expect(await store.payments.authorizeOnce(first)).toEqual({ status: 'authorized', amountCents: 5000 });
    expect(await store.payments.authorizeOnce({ ...first, amountCents: 1, approved: false })).toEqual({
      status: 'authorized',
      amountCents: 5000,
    });
    expect(await store.payments.settleTo({ ...target, amountCents: 3800, version: 2 })).toBe('applied');
    // The same version again, or an older one arriving late, changes nothing.
    expect(await store.payments.settleTo({ ...target, amountCents: 3800, version: 2 })).toBe('superseded');
    expect(await store.payments.settleTo({ ...target, amountCents: 6000, version: 1 })).toBe('superseded');
    expect(await store.payments.find('pay-1')).toEqual({ status: 'authorized', amountCents: 3800 });
    expect(await store.payments.settleTo({ ...target, amountCents: 6300, version: 3 })).toBe('applied');
    expect(await store.payments.find('pay-1')).toEqual({ status: 'authorized', amountCents: 6300 });
    expect(await store.payments.settleTo({ ...target, amountCents: 0, version: 4 })).toBe('applied');
    expect(await store.payments.settleTo({ ...target, amountCents: 0, version: 4 })).toBe('superseded');
    expect(await store.payments.find('pay-1')).toEqual({ status: 'authorized', amountCents: 0 });

    await store.payments.authorizeOnce({ ...first, key: 'pay-2', approved: false });
    expect(await store.payments.settleTo({ ...target, key: 'pay-2', amountCents: 100, version: 1 })).toBe(
      'not-authorised',
    );
    expect(await store.payments.settleTo({ ...target, key: 'pay-2', amountCents: 0, version: 1 })).toBe(
      'applied',
    );
    expect(await store.payments.find('pay-2')).toEqual({ status: 'declined', amountCents: 5000 });

    // A release before any authorisation is kept: the authorisation that arrives after it is declined.
    expect(await store.payments.settleTo({ ...target, key: 'pay-late', amountCents: 0, version: 1 })).toBe(
      'applied',
    );
    expect(await store.payments.authorizeOnce({ ...first, key: 'pay-late' })).toEqual({
      status: 'declined',
      amountCents: 0,
    });
    expect(await store.payments.settleTo({ ...target, key: 'pay-none', amountCents: 100, version: 1 })).toBe(
      'not-authorised',
    );
    expect(await store.payments.find('pay-none')).toBeNull();
  });

  it('keeps the highest version of concurrent targets of one payment', async () => {
    await store.payments.authorizeOnce({
      key: 'pay-c',
      cardId,
      currency: 'USD',
      amountCents: 10_000,
      approved: true,
      now: T0,
    });
    const targets = Array.from({ length: 20 }, (_, i) => ({
      version: 1 + ((i * 7) % 20),
      amountCents: 100 * i,
    }));
    await Promise.all(
      targets.map((t) => store.payments.settleTo({ key: 'pay-c', cardId, currency: 'USD', now: T0, ...t })),
    );
    const last = targets.find((t) => t.version === 20)!;
    expect(await store.payments.find('pay-c')).toEqual({
      status: 'authorized',
      amountCents: last.amountCents,
    });
  });

  it('lets a release and an authorisation of one key race: whichever comes first, nothing stays held', async () => {
    for (let i = 0; i < 10; i += 1) {
      const key = `pay-race-${i}`;
      await Promise.all([
        store.payments.authorizeOnce({
          key,
          cardId,
          currency: 'USD',
          amountCents: 700,
          approved: true,
          now: T0,
        }),
        store.payments.settleTo({ key, cardId, currency: 'USD', amountCents: 0, version: 1, now: T0 }),
      ]);
      const held = await store.payments.find(key);
      expect(held?.status === 'authorized' ? held.amountCents : 0).toBe(0);
    }
  });
});
