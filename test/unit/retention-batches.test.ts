// The retention pass's batches against a fake store whose deletes take a time in proportion to their rows: a
// batch that holds the write lock past its target is followed by smaller ones, and the pass still deletes all.
import { describe, expect, it } from 'vitest';
import { pruneOnce, type RetentionDeps } from '../../src/services/retention.js';
import type { RetentionStore } from '../../src/store/port/store.port.js';
import { createLogger } from '../../src/logger.js';

/** A store of `rows` old events whose delete costs `msPerRow` on the fake timer; records each batch's size. */
function slowStore(rows: number, msPerRow: number) {
  let now = 0;
  let left = rows;
  const sizes: number[] = [];
  const none = async () => 0;
  const retention: RetentionStore = {
    pruneDeliveries: none,
    async pruneEvents(_before, limit) {
      sizes.push(limit);
      const done = Math.min(limit, left);
      left -= done;
      now += limit * msPerRow;
      return done;
    },
    pruneCursors: none,
    reclaimSpace: none,
  };
  const deps = {
    store: { retention },
    logger: createLogger({ LOG_LEVEL: 'silent', LOG_PRETTY: 'false' }, 'test'),
    clock: () => Date.UTC(2026, 10, 25),
    config: { EVENT_RETENTION_DAYS: 30, REDIS_PREFIX: 'test' },
  } as unknown as RetentionDeps;
  return { deps, sizes, timer: () => now, left: () => left };
}

describe('a retention pass over a store whose batches are slow', () => {
  it('then its first batch is an eighth of the size, and a slow one cuts the next to fit its target; every row goes', async () => {
    const store = slowStore(2_000, 1);
    const counts = await pruneOnce(
      store.deps,
      { batchSize: 500, batchTargetMs: 50, pauseMs: 0, timer: store.timer },
      new AbortController().signal,
    );
    expect(counts.events).toBe(2_000);
    expect(store.left()).toBe(0);
    expect(store.sizes.slice(0, 2)).toEqual([63, 31]);
    expect(store.sizes.slice(1).every((size) => size <= 50)).toBe(true);
    expect(counts.longestBatchMs).toBe(63);
  });

  it('then a batch far past its target is followed by one that fits it, not merely half', async () => {
    const store = slowStore(2_000, 10);
    await pruneOnce(
      store.deps,
      { batchSize: 800, batchTargetMs: 50, pauseMs: 0, timer: store.timer },
      new AbortController().signal,
    );
    expect(store.sizes.slice(0, 3)).toEqual([100, 5, 5]);
  });

  it('then quick batches double up to the size asked, never more', async () => {
    const store = slowStore(1_000, 0.01);
    await pruneOnce(
      store.deps,
      { batchSize: 200, pauseMs: 0, timer: store.timer },
      new AbortController().signal,
    );
    expect(store.sizes.slice(0, 4)).toEqual([25, 50, 100, 200]);
    expect(Math.max(...store.sizes)).toBe(200);
  });

  it('then the reclaim step gives pages back 8 at first and at most 64 a batch, and the pass tells the longest batch of each step', async () => {
    const store = slowStore(100, 1);
    let free = 300;
    const pages: number[] = [];
    const retention = store.deps.store.retention;
    // Each page given back costs 2 ms on the pass's timer, so the step's longest is its largest batch's.
    let reclaimMs = 0;
    const timer = () => store.timer() + reclaimMs;
    retention.reclaimSpace = async (size) => {
      pages.push(size);
      const done = Math.min(size, free);
      free -= done;
      reclaimMs += done * 2;
      return done;
    };
    const counts = await pruneOnce(
      store.deps,
      { batchTargetMs: 1000, pauseMs: 0, timer },
      new AbortController().signal,
    );
    expect(counts.pagesReclaimed).toBe(300);
    expect(pages.slice(0, 5)).toEqual([8, 16, 32, 64, 64]);
    expect(Math.max(...pages)).toBe(64);
    expect(counts.longestBatchMsByStep).toEqual({ deliveries: 0, events: 126, cursors: 0, reclaim: 128 });
    expect(counts.longestBatch).toBe('reclaim');
  });
});
