// The batch's flow in its service (services/submit-order-batch.ts): the listings read once, each entry read by
// the edge and checked in turn, what the edge refused checked all the same but never placed, one result per
// entry in request order. Fakes for the intake and the store; no entry here gets as far as placing.
import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/logger.js';
import type { CheckedOrder, OrderCheck, OrderRequestRead } from '../../src/services/order-intake.js';
import { submitOrderBatch, type SubmitOrderBatchDeps } from '../../src/services/submit-order-batch.js';

const request = (ccToken: string): OrderRequestRead => ({
  draft: null,
  listings: [],
  ccToken,
  hopeless: false,
});
const log = { info: () => undefined, warn: () => undefined } as unknown as Logger;

describe('submitOrderBatch', () => {
  it('reads each entry as its turn comes, checks it, and answers each in request order', async () => {
    const calls: string[] = [];
    const reserved: number[][] = [];
    const deps = {
      clock: () => 0,
      intake: {
        async loadCatalog(ids: readonly number[]) {
          calls.push(`catalog ${ids.join(',')}`);
          return { listings: new Map(), vendors: new Map() };
        },
        async check(_clientId: number, read: OrderRequestRead): Promise<OrderCheck> {
          calls.push(`check ${read.ccToken}`);
          if (read.ccToken === 'locked') return { kind: 'locked', retryAfterMs: 5000 };
          if (read.ccToken === 'fine') return { kind: 'checked', order: {} as CheckedOrder };
          return { kind: 'refused', problems: [{ kind: 'bad-card' }] };
        },
      },
      backpressure: {
        async reserve(_clientId: number, items: number[]) {
          reserved.push(items);
          return { admitted: 0, retryAfterS: 0, ofClient: false };
        },
        release: () => undefined,
      },
    } as unknown as SubmitOrderBatchDeps;
    // 'fine' passes its check, but the edge refused it (its requestId): it is not placed.
    const entries = ['a', 'locked', null, 'b', 'fine'];
    const results = await submitOrderBatch(deps, {
      clientId: 1,
      entries,
      listingIds: [7, 8],
      read(entry, index) {
        calls.push(`read ${index}`);
        return {
          requestId: `r${index}`,
          requestHash: '',
          request: entry === null ? null : request(entry),
          refused: entry === 'b' || entry === 'fine',
        };
      },
      log,
    });
    expect(calls).toEqual([
      'catalog 7,8',
      'read 0',
      'check a',
      'read 1',
      'check locked',
      'read 2',
      'read 3',
      'check b',
      'read 4',
      'check fine',
    ]);
    expect(results.map(({ entry, result }) => [entry.requestId, result?.kind ?? null])).toEqual([
      ['r0', 'refused'],
      ['r1', 'locked'],
      ['r2', null],
      ['r3', 'refused'],
      ['r4', null],
    ]);
    expect(reserved).toEqual([[]]);
  });
});
