// The batch's flow in its service (services/submit-order-batch.ts): the listings read once, each entry read by
// the edge and checked in turn, what the edge refused checked all the same but never placed, one result per
// entry in request order. Fakes for the intake and the store; no entry here gets as far as placing.
import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/logger.js';
import { loopTurns } from '../../src/services/loop-turns.js';
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

describe('submitOrderBatch on a loop shared with other requests', () => {
  it('lets other requests run once an entry check has held the loop its budget, by time, not by entry count', async () => {
    let now = 0;
    const turns: number[] = [];
    // Each check costs the milliseconds its ccToken names: cheap ones share a turn, an expensive one ends it.
    const costs = ['1', '1', '1', '12', '1', '1', '30', '1', '2', '2', '2', '2', '2', '2'];
    const deps = {
      clock: () => 0,
      intake: {
        loadCatalog: async () => ({ listings: new Map(), vendors: new Map() }),
        async check(_clientId: number, read: OrderRequestRead): Promise<OrderCheck> {
          now += Number(read.ccToken);
          return { kind: 'refused', problems: [{ kind: 'bad-card' }] };
        },
      },
      backpressure: {
        reserve: async () => ({ admitted: 0, retryAfterS: 0, ofClient: false }),
        release: () => undefined,
      },
    } as unknown as SubmitOrderBatchDeps;
    let index = 0;
    const results = await submitOrderBatch(deps, {
      clientId: 1,
      entries: costs,
      listingIds: [],
      read(entry, at) {
        index = at;
        return { requestId: `r${at}`, requestHash: '', request: request(entry), refused: false };
      },
      log,
      turn: loopTurns(
        10,
        () => now,
        async () => void turns.push(index),
      ),
    });
    expect(results).toHaveLength(costs.length);
    // A turn ends once it has held 10 ms: after entries 0–3 (15 ms), 4–6 (32 ms) and 7–12 (11 ms); 13 is left.
    expect(turns).toEqual([3, 6, 12]);
  });
});
