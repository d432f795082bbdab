import { describe, expect, it } from 'vitest';
import type { UsdPer } from '../../src/domain/money.js';
import type { TaxRules } from '../../src/domain/tax.js';
import { ORDER_PROBLEMS, createOrderCheck } from '../../src/services/orders/order-check.js';
import type { Card, PricingCatalog } from '../../src/store/port/store.port.js';
import { orderBody } from '../helpers/fixtures.js';

// The order check's rules against in-memory fakes of the store and the lockout: what is looked up, what is
// counted towards the card-testing lock, and which problems are reported together, in which order.
const CARD: Card = { cardId: 1, clientId: 7, active: true } as unknown as Card;

function setup({ lockedMs = 0 } = {}) {
  const lookups: string[] = [];
  const failures: string[] = [];
  const check = createOrderCheck({
    config: { marketplaceNames: ['bookmarket', 'b', 'c'] },
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
  return { check, lookups, failures };
}

const body = (ccToken: string, over: Record<string, unknown> = {}) =>
  orderBody(ccToken, { listings: [{ listingId: 99, quantity: 1 }], ...over }) as Record<string, unknown>;

describe('the order check (services/orders/order-check.ts)', () => {
  it('answers a locked client with the lock alone and when to retry, before any lookup', async () => {
    const { check, lookups } = setup({ lockedMs: 1500 });
    expect(await check.check(7, body('bad', { domain: 'nowhere' }))).toEqual({
      kind: 'refused',
      problems: [ORDER_PROBLEMS.locked],
      retryAfterS: 2,
    });
    expect(lookups).toEqual([]);
  });

  it('looks nothing up for a hopeless request, and counts no card failure', async () => {
    const { check, lookups, failures } = setup();
    const listings = Array.from({ length: 101 }, (_, i) => ({ listingId: i + 1, quantity: 1 }));
    const result = await check.check(7, body('bad', { listings, domain: 'nowhere' }));
    expect(result.kind === 'refused' && result.problems.map((p) => p.kind)).toEqual(['listings', 'field']);
    expect(result.kind === 'refused' && result.problems[0]).toEqual(ORDER_PROBLEMS.tooManyListings);
    expect(lookups).toEqual([]);
    expect(failures).toEqual([]);
  });

  it('reports the shape, unknown listings and a bad card together, in that order, and counts the bad card', async () => {
    const { check, failures } = setup();
    const result = await check.check(7, body('bad', { domain: 'nowhere' }));
    expect(result).toEqual({
      kind: 'refused',
      problems: [
        { kind: 'field', message: expect.stringMatching(/^domain: must be one of /) },
        { kind: 'field', message: 'listings[0].listingId: listing 99 does not exist' },
        { kind: 'card', message: 'ccToken: not an active card of this client' },
      ],
    });
    expect(failures).toEqual(['7']);
  });

  it("treats another client's card as a bad one", async () => {
    const { check, failures } = setup();
    const result = await check.check(8, body('good'));
    expect(result.kind === 'refused' && result.problems.map((p) => p.kind)).toEqual(['field', 'card']);
    expect(failures).toEqual(['8']);
  });

  it('still looks up a malformed request, so that every problem is reported at once', async () => {
    const { check, lookups } = setup();
    const result = await check.check(
      7,
      body('good', { shippingMode: 'X', listings: [{ listingId: 5, quantity: 1 }] }),
    );
    expect(result.kind).toBe('refused');
    expect(lookups).toEqual(['listings 5', 'card good']);
  });

  it('reads the listings of a batch once, from the catalog it was given', async () => {
    const { check, lookups } = setup();
    const catalog: PricingCatalog = { listings: new Map(), vendors: new Map() };
    await check.check(7, body('good', { dryrun: true }), catalog);
    expect(lookups).toEqual(['card good']);
  });
});
