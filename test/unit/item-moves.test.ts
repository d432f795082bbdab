import { describe, expect, it } from 'vitest';
import { ItemStatus, type ItemStatusCode } from '../../src/domain/item-status.js';
import type { Logger } from '../../src/logger.js';
import { moveItem, type ItemLifecycleDeps } from '../../src/services/item-lifecycle.js';
import type { ItemMoveWrite, StoredItemWithCurrency } from '../../src/store/port/store.port.js';

// moveItem's rules against an in-memory fake of the items port: what it writes for a move (the stock, the
// ledger entry), and that it decides again when the item changed under it.
const S = ItemStatus;
const item = (status: ItemStatusCode, over: Partial<StoredItemWithCurrency> = {}) =>
  ({
    orderItemId: 3,
    orderId: 9,
    listingId: 44,
    status,
    statusChangedAt: 100,
    costCents: 1000,
    shipcostCents: 300,
    taxCents: 80,
    extraShippingCents: null,
    currency: 'USD',
    ...over,
  }) as StoredItemWithCurrency;

function fakeItems(reads: StoredItemWithCurrency[], changedFirst = 0) {
  const writes: ItemMoveWrite[] = [];
  let changed = changedFirst;
  const deps = {
    store: {
      items: {
        getItem: async () => (reads.length > 1 ? reads.shift()! : reads[0]!),
        applyMove: async (write: ItemMoveWrite) => {
          writes.push(write);
          if (changed-- > 0) return { kind: 'changed' as const };
          return { kind: 'moved' as const, item: item(write.to), entryId: null };
        },
      },
    },
    clock: () => 500,
    logger: { info: () => undefined, warn: () => undefined } as unknown as Logger,
  } as unknown as ItemLifecycleDeps;
  return { deps, writes };
}

describe('moveItem against a fake items port', () => {
  it('cancelling a bought item gives its copy back and voids its whole share', async () => {
    const { deps, writes } = fakeItems([item(S.ORDERED)]);
    const outcome = await moveItem(deps, { orderItemId: 3, to: S.CANCELLED_BY_BUYER });
    expect(outcome).toMatchObject({ kind: 'moved', from: S.ORDERED });
    expect(writes[0]).toMatchObject({
      returnStockOf: 44,
      ledger: { kind: 'void', amountCents: 1380, entryKey: 'void:item-3', orderId: 9 },
      event: { type: 'order.updated' },
    });
  });

  it('shipping writes no ledger entry and keeps the stock taken', async () => {
    const { deps, writes } = fakeItems([item(S.ORDERED)]);
    await moveItem(deps, { orderItemId: 3, to: S.SHIPPED, trackingId: 'T1' });
    expect(writes[0]).toMatchObject({ returnStockOf: null, ledger: null, trackingId: 'T1', now: 500 });
  });

  it('refuses a move the table does not allow, naming the moves that are', async () => {
    const { deps, writes } = fakeItems([item(S.SHIPPED)]);
    const outcome = await moveItem(deps, { orderItemId: 3, to: S.ORDERED });
    expect(outcome).toMatchObject({ kind: 'refused', allowed: [S.REFUNDED] });
    expect(writes).toEqual([]);
  });

  it('reads again and decides again when the item changed between its read and its write', async () => {
    const { deps, writes } = fakeItems([item(S.ORDERED), item(S.SHIPPED)], 1);
    const outcome = await moveItem(deps, { orderItemId: 3, to: S.ITEM_UNAVAILABLE });
    // Shipped in between: unavailable is no longer a move of it.
    expect(outcome).toMatchObject({ kind: 'refused' });
    expect(writes).toHaveLength(1);
  });

  it("leaves an item alone that is not as reconciliation's guard expects", async () => {
    const { deps, writes } = fakeItems([item(S.ORDERED, { statusChangedAt: 900 })]);
    const outcome = await moveItem(deps, {
      orderItemId: 3,
      to: S.ITEM_UNAVAILABLE,
      expect: { from: S.ORDERED, changedBefore: 800 },
    });
    expect(outcome).toEqual({ kind: 'unexpected' });
    expect(writes).toEqual([]);
  });
});
