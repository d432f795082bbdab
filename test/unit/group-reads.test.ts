import { describe, expect, it } from 'vitest';
import {
  groupCatalogReads,
  groupOrderReads,
  MAX_GROUPED_LISTINGS,
} from '../../src/store/decorators/group-reads.js';
import type { PricingListing, PricingVendor } from '../../src/domain/pricing.js';
import type {
  CatalogStore,
  OrderAsk,
  OrderStore,
  OrderWithItems,
  PricingCatalog,
} from '../../src/store/port/store.port.js';

// The grouping alone, over recording adapters; the real adapters' getManyForClients and loadForPricing are covered by the
// store's contract tests, which open the store with this grouping on.

const stored = (orderId: number, clientId: number) =>
  ({ order: { orderId, clientId }, items: [] }) as unknown as OrderWithItems;

function recordingOrders(orders: OrderWithItems[], fail?: Error) {
  const calls: string[] = [];
  const store = {
    async getForClient(clientId: number, orderId: number) {
      calls.push(`one ${clientId}/${orderId}`);
      if (fail) throw fail;
      return orders.find((o) => o.order.orderId === orderId && o.order.clientId === clientId) ?? null;
    },
    async getManyForClients(asks: readonly OrderAsk[]) {
      calls.push(`many ${asks.map((ask) => ask.orderId).join(',')}`);
      if (fail) throw fail;
      return orders.filter((o) =>
        asks.some((a) => a.orderId === o.order.orderId && a.clientId === o.order.clientId),
      );
    },
  } as unknown as OrderStore;
  return { store, calls };
}

describe('grouped order reads', () => {
  it("reads the gets of one turn in one getManyForClients; each gets its order only when it is the client's", async () => {
    const { store, calls } = recordingOrders([stored(1, 7), stored(2, 7), stored(3, 8)]);
    const grouped = groupOrderReads(store);
    const got = await Promise.all([
      grouped.getForClient(7, 1),
      grouped.getForClient(7, 3), // client 8's order
      grouped.getForClient(8, 3),
      grouped.getForClient(7, 99), // no such order
      grouped.getForClient(7, 1),
    ]);
    expect(calls).toEqual(['many 1,3,3,99,1']);
    expect(got.map((o) => o && `${o.order.clientId}/${o.order.orderId}`)).toEqual([
      '7/1',
      null,
      '8/3',
      null,
      '7/1',
    ]);
  });

  it('reads a get alone with getForClient, and splits more than the group size', async () => {
    const { store, calls } = recordingOrders([stored(1, 7), stored(2, 7), stored(3, 7)]);
    expect(await groupOrderReads(store).getForClient(7, 2)).toMatchObject({ order: { orderId: 2 } });
    expect(calls).toEqual(['one 7/2']);
    calls.length = 0;
    const one = groupOrderReads(store, 2);
    const got = await Promise.all([1, 2, 3].map((id) => one.getForClient(7, id)));
    expect(got.map((o) => o?.order.orderId)).toEqual([1, 2, 3]);
    expect(calls).toEqual(['many 1,2', 'one 7/3']);
  });

  it("fails each get of a group with the group's error when the store is away", async () => {
    const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const grouped = groupOrderReads(recordingOrders([], down).store);
    const outcomes = await Promise.allSettled([grouped.getForClient(7, 1), grouped.getForClient(7, 2)]);
    expect(outcomes).toEqual([
      { status: 'rejected', reason: down },
      { status: 'rejected', reason: down },
    ]);
  });

  it('reads each get of a group that failed otherwise again alone, each answering for itself', async () => {
    const { store, calls } = recordingOrders([stored(1, 7), stored(2, 8)]);
    const failing = {
      ...store,
      getManyForClients: () => Promise.reject(new Error('statement failed')),
    } as OrderStore;
    const grouped = groupOrderReads(failing);
    const got = await Promise.all([grouped.getForClient(7, 1), grouped.getForClient(7, 2)]);
    expect(got.map((o) => o?.order.orderId ?? null)).toEqual([1, null]);
    expect(calls).toEqual(['one 7/1', 'one 7/2']);
  });
});

const listing = (listingId: number, vendorId: number) => ({ listingId, vendorId }) as PricingListing;
const vendor = (vendorId: number) => ({ vendorId }) as PricingVendor;

function recordingCatalog() {
  const calls: number[][] = [];
  const listings = [listing(1, 10), listing(2, 20), listing(3, 10)];
  const store = {
    async loadForPricing(listingIds: readonly number[]): Promise<PricingCatalog> {
      calls.push([...listingIds]);
      const found = listings.filter((l) => listingIds.includes(l.listingId));
      return {
        listings: new Map(found.map((l) => [l.listingId, l])),
        vendors: new Map(found.map((l) => [l.vendorId, vendor(l.vendorId)])),
      };
    },
  } as unknown as CatalogStore;
  return { store, calls };
}

const shape = (catalog: PricingCatalog) => ({
  listings: [...catalog.listings.keys()],
  vendors: [...catalog.vendors.keys()],
});

describe('grouped catalog reads', () => {
  it('reads the listings of one turn in one loadForPricing; each gets its own, keyed in the order it asked', async () => {
    const { store, calls } = recordingCatalog();
    const grouped = groupCatalogReads(store);
    const got = await Promise.all([
      grouped.loadForPricing([3, 1]),
      grouped.loadForPricing([2, 99]),
      grouped.loadForPricing([99]),
      grouped.loadForPricing([1, 3, 1]),
    ]);
    expect(calls).toEqual([[3, 1, 2, 99]]);
    expect(got.map(shape)).toEqual([
      { listings: [3, 1], vendors: [10] },
      { listings: [2], vendors: [20] },
      { listings: [], vendors: [] },
      { listings: [1, 3], vendors: [10] },
    ]);
  });

  it('reads a large set alone, at once', async () => {
    const { store, calls } = recordingCatalog();
    const grouped = groupCatalogReads(store);
    const many = Array.from({ length: MAX_GROUPED_LISTINGS + 1 }, (_, i) => i + 1);
    const [large, small] = await Promise.all([grouped.loadForPricing(many), grouped.loadForPricing([2])]);
    expect(calls).toEqual([many, [2]]);
    expect(shape(large)).toEqual({ listings: [1, 2, 3], vendors: [10, 20] });
    expect(shape(small)).toEqual({ listings: [2], vendors: [20] });
  });
});
