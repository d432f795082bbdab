// The web's wait for SQLite's write lock: an operation that finds it taken is tried again after growing pauses,
// until its wait runs out; nothing else is tried twice.
import { describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitUnblocked } from '../../src/store/sqlite/wait-unblocked.js';
import { STORE_PORTS, type Store } from '../../src/store/port/store.port.js';

const busy = () => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });

/** A store whose orders.acceptMany runs `attempt` (its call count as argument); other ports are empty. */
function storeWith(attempt: (call: number) => unknown): { store: Store; calls: () => number } {
  let calls = 0;
  const parts = Object.fromEntries(STORE_PORTS.map((port) => [port, {}]));
  const orders = {
    async acceptMany() {
      return attempt(++calls);
    },
  };
  return { store: { kind: 'sqlite', ...parts, orders } as unknown as Store, calls: () => calls };
}

describe('an operation of the web on SQLite', () => {
  it('is tried again after pauses that double, up to 2 ms (a commit holds the lock about 1 ms), while the write lock is taken', async () => {
    const { store, calls } = storeWith((call) => {
      if (call <= 6) throw busy();
      return ['accepted'];
    });
    const pauses: number[] = [];
    const waiting = waitUnblocked(store, 10_000, async (ms) => void pauses.push(ms));
    await expect(waiting.orders.acceptMany([])).resolves.toEqual(['accepted']);
    expect(calls()).toBe(7);
    expect(pauses).toEqual([1, 2, 2, 2, 2, 2]);
  });

  it('fails with SQLITE_BUSY once its wait has run out', async () => {
    const { store, calls } = storeWith(() => {
      throw Object.assign(busy(), { code: 'SQLITE_BUSY_SNAPSHOT' });
    });
    const started = performance.now();
    await expect(waitUnblocked(store, 40, sleep).orders.acceptMany([])).rejects.toMatchObject({
      code: 'SQLITE_BUSY_SNAPSHOT',
    });
    expect(performance.now() - started).toBeGreaterThanOrEqual(39);
    expect(calls()).toBeGreaterThan(2);
  });

  it('is not tried again when it failed for another reason', async () => {
    const { store, calls } = storeWith(() => {
      throw Object.assign(new Error('constraint'), { code: 'SQLITE_CONSTRAINT_UNIQUE' });
    });
    await expect(waitUnblocked(store, 10_000, sleep).orders.acceptMany([])).rejects.toThrow('constraint');
    expect(calls()).toBe(1);
  });
});
