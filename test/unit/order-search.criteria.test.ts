import { describe, expect, it } from 'vitest';
import { criteriaHash, resolveWindow, type OrderSearchRequest } from '../../src/services/search-orders.js';
import {
  chooseDriver,
  choosePath,
  countedProbe,
  FEW_ORDER_SCAN,
  SCAN_CAPS,
} from '../../src/store/shared/search-plan.js';
import type { SearchCriteria } from '../../src/store/port/store.port.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-21T10:00:00.000Z');
const request = (extra: Partial<OrderSearchRequest> = {}): OrderSearchRequest => ({
  sortOrder: 'ascending',
  limit: 20,
  ...extra,
});

describe('resolveWindow', () => {
  it('without dates covers the 90 days before this quarter hour up to and including this millisecond', () => {
    expect(resolveWindow(request(), NOW + 899_999)).toEqual({
      dateStart: NOW - 90 * DAY,
      dateEnd: NOW + 900_000,
    });
    // A later page of the same search: the start of its first page's window, up to now.
    expect(resolveWindow(request(), NOW, NOW + DAY)).toEqual({
      dateStart: NOW - 90 * DAY,
      dateEnd: NOW + DAY,
    });
  });

  it('completes a lone bound to 90 days on its side', () => {
    const start = Date.parse('2026-01-01T00:00:00Z');
    expect(resolveWindow(request({ dateStart: start }), NOW)).toEqual({
      dateStart: start,
      dateEnd: start + 90 * DAY,
    });
    expect(resolveWindow(request({ dateEnd: start }), NOW)).toEqual({
      dateStart: start - 90 * DAY,
      dateEnd: start,
    });
  });

  it('keeps both bounds when both are given', () => {
    expect(resolveWindow(request({ dateStart: 5, dateEnd: 9 }), NOW)).toEqual({ dateStart: 5, dateEnd: 9 });
  });
});

describe('criteriaHash', () => {
  it('ignores limit and next, and the order and repetition of ids', () => {
    const first = criteriaHash(request({ orderId: [3, 1, 2], vendorId: 7 }));
    expect(criteriaHash(request({ orderId: [1, 2, 3, 3], vendorId: 7, limit: 5, next: 99 }))).toBe(first);
  });

  it('changes with any criterion, the sort order included', () => {
    const base = criteriaHash(request());
    const variants: Partial<OrderSearchRequest>[] = [
      { sortOrder: 'descending' },
      { dateStart: 0 },
      { dateEnd: 0 },
      { itemUpdateDateStart: 0 },
      { itemUpdateDateEnd: 0 },
      { vendorId: 1 },
      { referenceId: 'a' },
      { orderId: [1] },
      { orderItemId: [1] },
    ];
    const hashes = variants.map((v) => criteriaHash(request(v)));
    expect(new Set([base, ...hashes]).size).toBe(variants.length + 1);
  });
});

describe('chooseDriver, shared by both adapters', () => {
  const criteria = (extra: Partial<SearchCriteria> = {}): SearchCriteria => ({
    dateStart: 0,
    dateEnd: DAY,
    sortOrder: 'ascending',
    limit: 20,
    ...extra,
  });
  const counts =
    (orders: number, items: number, vendor: number | null = null, dense: number | null = null) =>
    () =>
      countedProbe({ orders, items, vendor, dense });
  const narrow = counts(10, 10);
  const wide = counts(2000, 2000);

  it('leads with given ids, then a reference, over everything else', () => {
    const all = { vendorId: 1, referenceId: 'r', itemUpdateStart: 0, orderItemIds: [1], orderIds: [1] };
    expect(chooseDriver(criteria(all), narrow)).toBe('order-ids');
    expect(chooseDriver(criteria({ ...all, orderIds: undefined }), narrow)).toBe('item-ids');
    expect(chooseDriver(criteria({ ...all, orderIds: undefined, orderItemIds: undefined }), narrow)).toBe(
      'reference',
    );
  });

  it('reads the items updated in the range when few, else the orders updated since its start when few', () => {
    expect(chooseDriver(criteria({ itemUpdateStart: 0 }), narrow)).toBe('updated-items');
    // 9 late orders of 250 items each: over the items' cap, under the orders'.
    expect(chooseDriver(criteria({ itemUpdateStart: 0 }), counts(9, 2000))).toBe('updated-orders');
    // A range long past: most orders were updated since its start, few items in it.
    expect(chooseDriver(criteria({ itemUpdateStart: 0, itemUpdateEnd: 5 }), counts(2000, 30))).toBe(
      'updated-items',
    );
    expect(chooseDriver(criteria({ itemUpdateStart: 0 }), wide)).toBe('dated-items');
    expect(chooseDriver(criteria({ itemUpdateEnd: 5, vendorId: 1 }), wide)).toBe('vendor-items');
    expect(chooseDriver(criteria({ vendorId: 1 }), narrow)).toBe('vendor-items');
  });

  it('given a vendor too, leads by whichever side is smaller', () => {
    const vendorNoneMatch = criteria({ itemUpdateStart: 0, vendorId: 1 });
    expect(chooseDriver(vendorNoneMatch, counts(9, 2000, 2000))).toBe('updated-orders');
    expect(chooseDriver(vendorNoneMatch, counts(9, 2000, 3))).toBe('vendor-items');
    expect(chooseDriver(vendorNoneMatch, counts(9, 2000, 9))).toBe('updated-orders');
    expect(chooseDriver(vendorNoneMatch, counts(2000, 40, 2000))).toBe('updated-items');
    expect(chooseDriver(vendorNoneMatch, counts(2000, 2000, 2000))).toBe('vendor-items');
    expect(chooseDriver(vendorNoneMatch, counts(9, 40, 39))).toBe('vendor-items');
  });

  it('says which paths are bounded by the page: all but an update range with no narrow side', () => {
    const path = (extra: Partial<SearchCriteria>, probe = wide) => choosePath(criteria(extra), probe);
    expect(path({ itemUpdateStart: 0 })).toEqual({ driver: 'dated-items', bounded: false });
    expect(path({ itemUpdateStart: 0, vendorId: 1 })).toEqual({ driver: 'vendor-items', bounded: false });
    // The same paths, chosen because a side is narrow or the window's first items hold the page, or with no range.
    expect(path({ itemUpdateStart: 0 }, counts(2000, 2000, null, 21))).toEqual({
      driver: 'dated-items',
      bounded: true,
    });
    expect(path({ itemUpdateStart: 0, vendorId: 1 }, counts(9, 2000, 3))).toEqual({
      driver: 'vendor-items',
      bounded: true,
    });
    expect(path({ vendorId: 1 })).toEqual({ driver: 'vendor-items', bounded: true });
    expect(path({})).toEqual({ driver: 'orders', bounded: true });
    for (const extra of [
      { orderIds: [1] },
      { orderItemIds: [1] },
      { referenceId: 'r' },
      { itemUpdateStart: 0 },
    ])
      expect(path(extra, narrow).bounded).toBe(true);
  });

  it('counts the orders only when the items in the range are too many to read (an order costs a row and a seek)', () => {
    const asked: string[] = [];
    const probe = (orders: number, items: number) => () => ({
      items: () => (asked.push('items'), items),
      dense: () => (asked.push('dense'), 0),
      orders: () => (asked.push('orders'), orders),
      vendor: (cap: number) => (asked.push('vendor'), cap),
    });
    expect(chooseDriver(criteria({ itemUpdateStart: 0 }), probe(10, 10))).toBe('updated-items');
    expect(asked).toEqual(['items']);
    asked.length = 0;
    expect(chooseDriver(criteria({ itemUpdateStart: 0 }), probe(10, 2000))).toBe('updated-orders');
    expect(asked).toEqual(['items', 'orders']);
    asked.length = 0;
    // Not few: the dense probe, then the orders up to their cap.
    expect(chooseDriver(criteria({ itemUpdateStart: 0 }), probe(100, 2000))).toBe('updated-orders');
    expect(asked).toEqual(['items', 'orders', 'dense', 'orders']);
  });

  it('reads fewer than FEW_ORDER_SCAN orders updated since the start before asking whether the window is dense', () => {
    const caps: number[] = [];
    const probe = (orders: number) => () => ({
      items: () => 2000,
      dense: () => 21,
      orders: (cap: number) => (caps.push(cap), Math.min(orders, cap)),
      vendor: (cap: number) => cap,
    });
    const range = criteria({ itemUpdateStart: 0, limit: 20 });
    expect(chooseDriver(range, probe(FEW_ORDER_SCAN - 1))).toBe('updated-orders');
    expect(caps).toEqual([FEW_ORDER_SCAN]);
    caps.length = 0;
    expect(chooseDriver(range, probe(FEW_ORDER_SCAN))).toBe('dated-items');
    expect(caps).toEqual([FEW_ORDER_SCAN]);
    // Never more than the orders' own cap: under it, the order path is narrow anyway.
    caps.length = 0;
    expect(chooseDriver(range, probe(5), { ...SCAN_CAPS, narrowOrderScan: 10, fewOrderScan: 100 })).toBe(
      'updated-orders',
    );
    expect(caps).toEqual([10]);
  });

  it('scans the window in result order when its first items hold the page (limit + 1 orders), without a vendor', () => {
    const range = criteria({ itemUpdateStart: 0, limit: 20 });
    expect(chooseDriver(range, counts(100, 2000, null, 21))).toBe('dated-items');
    expect(chooseDriver(range, counts(100, 2000, null, 20))).toBe('updated-orders');
    // A few items in the range are read directly, however dense.
    expect(chooseDriver(range, counts(100, 30, null, 21))).toBe('updated-items');
    // The vendor's path checks each order's vendor by a seek: the first items say nothing of it.
    expect(chooseDriver({ ...range, vendorId: 1 }, counts(100, 2000, 2000, 21))).toBe('updated-orders');
  });

  it('asks about the update range only when one is given', () => {
    const ask = () => {
      throw new Error('asked');
    };
    expect(chooseDriver(criteria(), ask)).toBe('orders');
    expect(chooseDriver(criteria({ vendorId: 2 }), ask)).toBe('vendor-items');
  });
});
