import { describe, expect, it } from 'vitest';
import type { UsdPer } from '../../src/domain/money.js';
import type { TaxRules } from '../../src/domain/tax.js';
import { createOrderIntake, type OrderRequestRead } from '../../src/services/order-intake.js';
import type { Card, PricingCatalog } from '../../src/store/port/store.port.js';

// The order check's rules against in-memory fakes of the store and the lockout: what is looked up, what is
// counted towards the card-testing lock, and which problems are reported together.
const CARD: Card = { cardId: 1, clientId: 7, active: true } as unknown as Card;

function setup({ lockedMs = 0 } = {}) {
  const lookups: string[] = [];
  const failures: string[] = [];
  const intake = createOrderIntake({
    config: { marketplaceNames: ['a', 'b', 'c'] },
    store: {
      catalog: {
        loadForPricing: async (ids: readonly number[]): Promise<PricingCatalog> => {
          lookups.push(`listings ${ids.join(',')}`);
          return { listings: new Map(), vendors: new Map() };
        },
      },
      clients: {
        findCard: async (token: string) => {
          lookups.push(`card ${token}`);
          return token === 'good' ? CARD : null;
        },
      },
    } as never,
    usdPer: {} as UsdPer,
    taxRules: {} as TaxRules,
    clock: () => 0,
    cardLockout: {
      lockedForMs: async () => lockedMs,
      recordFailure: async (subject: string) => void failures.push(subject),
    },
  });
  return { intake, lookups, failures };
}

const request = (over: Partial<OrderRequestRead>): OrderRequestRead => ({
  draft: null,
  listings: [],
  ccToken: undefined,
  hopeless: false,
  ...over,
});

describe('the order check (services/order-intake.ts)', () => {
  it('answers a locked client with the lock alone, before any lookup', async () => {
    const { intake, lookups } = setup({ lockedMs: 1500 });
    expect(await intake.check(7, request({ ccToken: 'bad' }))).toEqual({
      kind: 'locked',
      retryAfterMs: 1500,
    });
    expect(lookups).toEqual([]);
  });

  it('looks nothing up for a hopeless request, and counts no card failure', async () => {
    const { intake, lookups, failures } = setup();
    const check = await intake.check(7, request({ hopeless: true, ccToken: 'bad' }));
    expect(check).toEqual({ kind: 'refused', problems: [] });
    expect(lookups).toEqual([]);
    expect(failures).toEqual([]);
  });

  it('reports unknown listings and a bad card together, and counts the bad card', async () => {
    const { intake, failures } = setup();
    const check = await intake.check(7, request({ listings: [{ index: 1, listingId: 99 }], ccToken: 'bad' }));
    expect(check).toEqual({
      kind: 'refused',
      problems: [{ kind: 'unknown-listing', index: 1, listingId: 99 }, { kind: 'bad-card' }],
    });
    expect(failures).toEqual(['7']);
  });

  it("treats another client's card as a bad one", async () => {
    const { intake, failures } = setup();
    const check = await intake.check(8, request({ ccToken: 'good' }));
    expect(check).toEqual({ kind: 'refused', problems: [{ kind: 'bad-card' }] });
    expect(failures).toEqual(['8']);
  });

  it('still looks up a malformed request, so that every problem is reported at once', async () => {
    const { intake, lookups } = setup();
    const check = await intake.check(7, request({ listings: [{ index: 0, listingId: 5 }], ccToken: 'good' }));
    expect(check.kind).toBe('refused');
    expect(lookups).toEqual(['listings 5', 'card good']);
  });
});
