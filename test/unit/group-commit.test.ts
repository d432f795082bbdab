import { describe, expect, it } from 'vitest';
import { groupAttempts, groupCommits, groupSettlements } from '../../src/store/decorators/group-commit.js';
import type {
  AcceptResult,
  AttemptBegun,
  AttemptRequest,
  NewOrder,
  OrderStore,
  ProcessingStore,
  Settlement,
} from '../../src/store/port/store.port.js';

// The grouping alone, over a recording acceptMany; the real adapters' acceptMany is covered by the store's
// contract tests and the grouped path end to end by test/integration/real-orders.test.ts.
function recordingOrders(fail?: (orders: readonly NewOrder[]) => Error | undefined) {
  const groups: string[][] = [];
  let next = 1;
  const stored = new Map<string, number>();
  const orders = {
    async acceptMany(batch: readonly NewOrder[]): Promise<AcceptResult[]> {
      groups.push(batch.map((o) => o.requestId));
      const err = fail?.(batch);
      if (err) throw err;
      return batch.map((o) => {
        const key = `${o.clientId}/${o.requestId}`;
        const existing = stored.get(key);
        if (existing !== undefined) return { kind: 'duplicate', orderId: existing };
        stored.set(key, next);
        // What the order stored is the adapters' (the contract tests'); grouping passes it through untouched.
        return { kind: 'created', orderId: next++ } as AcceptResult;
      });
    },
  } as unknown as OrderStore;
  return { orders, groups };
}

const order = (requestId: string, clientId = 1) => ({ clientId, requestId }) as NewOrder;

describe('group commits', () => {
  it('accepts the orders asked for in one turn in one acceptMany, each with its own result', async () => {
    const { orders, groups } = recordingOrders();
    const grouped = groupCommits(orders);
    const results = await Promise.all(['a', 'b', 'c'].map((id) => grouped.accept(order(id))));
    expect(groups).toEqual([['a', 'b', 'c']]);
    expect(results).toEqual([
      { kind: 'created', orderId: 1 },
      { kind: 'created', orderId: 2 },
      { kind: 'created', orderId: 3 },
    ]);
  });

  it('puts the same client and request id in separate groups, so the second is a duplicate', async () => {
    const { orders, groups } = recordingOrders();
    const grouped = groupCommits(orders);
    const results = await Promise.all([
      grouped.accept(order('a')),
      grouped.accept(order('a', 2)),
      grouped.accept(order('a')),
    ]);
    expect(groups).toEqual([['a', 'a'], ['a']]);
    expect(results.map((r) => r.kind)).toEqual(['created', 'created', 'duplicate']);
  });

  it('splits more than the group size into several transactions, in arrival order', async () => {
    const { orders, groups } = recordingOrders();
    const grouped = groupCommits(orders, 2);
    await Promise.all(['a', 'b', 'c', 'd', 'e'].map((id) => grouped.accept(order(id))));
    expect(groups).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
  });

  it('fails every order of a group the store could not take (busy, away) with its error; the next goes on', async () => {
    const busy = Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
    const { orders, groups } = recordingOrders((batch) =>
      batch.some((o) => o.requestId === 'x') ? busy : undefined,
    );
    const grouped = groupCommits(orders);
    const first = await Promise.allSettled([grouped.accept(order('x')), grouped.accept(order('y'))]);
    expect(first).toEqual([
      { status: 'rejected', reason: busy },
      { status: 'rejected', reason: busy },
    ]);
    expect(groups).toEqual([['x', 'y']]);
    await expect(grouped.accept(order('y'))).resolves.toEqual({ kind: 'created', orderId: 1 });
  });

  it("accepts each order of a group that one client's order poisoned again alone: only that one fails", async () => {
    // Like PostgreSQL's INSERT over jsonb[]: one text it refuses fails the whole statement, and nothing is kept.
    const poisoned = Object.assign(new Error('unsupported Unicode escape sequence'), { code: '22P05' });
    const { orders, groups } = recordingOrders((batch) =>
      batch.some((o) => o.requestId.startsWith('poison')) ? poisoned : undefined,
    );
    const grouped = groupCommits(orders);
    const ids = ['a1', 'poison', 'a2', 'a3'];
    const outcomes = await Promise.allSettled(
      ids.map((id) => grouped.accept(order(id, id === 'poison' ? 2 : 1))),
    );
    expect(outcomes).toEqual([
      { status: 'fulfilled', value: { kind: 'created', orderId: 1 } },
      { status: 'rejected', reason: poisoned },
      { status: 'fulfilled', value: { kind: 'created', orderId: 2 } },
      { status: 'fulfilled', value: { kind: 'created', orderId: 3 } },
    ]);
    // The group once, then each member exactly once on its own.
    expect(groups).toEqual([ids, ...ids.map((id) => [id])]);
  });

  it('answers the orders of a group that committed but reported a failure as the orders it stored, once each', async () => {
    // A group whose commit went through but whose answer was lost: each accepted again alone is its own duplicate.
    const { orders, groups } = recordingOrders();
    let lostOnce = false;
    const flaky = {
      ...orders,
      async acceptMany(batch: readonly NewOrder[]) {
        const results = await orders.acceptMany(batch);
        if (batch.length > 1 && !lostOnce) {
          lostOnce = true;
          throw new Error('the answer was lost');
        }
        return results;
      },
    } as OrderStore;
    const grouped = groupCommits(flaky);
    const results = await Promise.all(['a', 'b'].map((id) => grouped.accept(order(id))));
    expect(results).toEqual([
      { kind: 'duplicate', orderId: 1 },
      { kind: 'duplicate', orderId: 2 },
    ]);
    expect(groups).toEqual([['a', 'b'], ['a'], ['b']]);
  });
});

describe('grouped settlements', () => {
  it('settles what the jobs ask for in one turn in one settleMany, each with its own answer', async () => {
    const groups: number[][] = [];
    const processing = {
      async settleMany(batch: readonly Settlement[]) {
        groups.push(batch.map((s) => s.orderId));
        const seen = new Set<number>();
        return batch.map((s) => !seen.has(s.orderId) && !!seen.add(s.orderId));
      },
    } as unknown as ProcessingStore;
    const grouped = groupSettlements(processing, 3);
    const settle = (orderId: number) => grouped.settle({ orderId } as Settlement);
    const answers = await Promise.all([7, 5, 7, 9].map(settle));
    expect(groups).toEqual([[7, 5, 7], [9]]);
    expect(answers).toEqual([true, true, false, true]);
  });
});

describe('grouped attempts', () => {
  const lease = { leaseUntil: 1, maxAttempts: 5 };
  const begun = (orderId: number) => ({ order: { orderId } }) as unknown as AttemptBegun;
  function recordingProcessing(failGroup: boolean) {
    const groups: number[][] = [];
    const alone: number[] = [];
    const processing = {
      async beginAttemptMany(batch: readonly AttemptRequest[]) {
        groups.push(batch.map((r) => r.orderId));
        if (failGroup) throw new Error('deadlock detected');
        return batch.map((r) => begun(r.orderId));
      },
      async beginAttempt(orderId: number) {
        alone.push(orderId);
        if (orderId === 13) throw new Error('order 13 failed');
        return begun(orderId);
      },
    } as unknown as ProcessingStore;
    return { processing, groups, alone };
  }

  it('begins the attempts of one turn in one beginAttemptMany, each order once a group, a lone one alone', async () => {
    const { processing, groups, alone } = recordingProcessing(false);
    const grouped = groupAttempts(processing, 3);
    const answers = await Promise.all([7, 5, 7, 9].map((id) => grouped.beginAttempt(id, lease)));
    expect(groups).toEqual([[7, 5, 9]]);
    expect(alone).toEqual([7]);
    expect(answers.map((a) => a!.order.orderId)).toEqual([7, 5, 7, 9]);
  });

  it('begins each attempt of a failed group again alone, each failing for itself only', async () => {
    const { processing, groups, alone } = recordingProcessing(true);
    const grouped = groupAttempts(processing);
    const answers = await Promise.allSettled([4, 13, 6].map((id) => grouped.beginAttempt(id, lease)));
    expect(groups).toEqual([[4, 13, 6]]);
    expect(alone.sort((a, b) => a - b)).toEqual([4, 6, 13]);
    expect(answers.map((a) => a.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(answers[1]).toMatchObject({ reason: { message: 'order 13 failed' } });
  });
});
