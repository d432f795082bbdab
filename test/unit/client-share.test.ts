// Each client's searches hold at most its share of a web's PostgreSQL pool, all clients' together leave one share
// to everything else, and a client at its share holds up no other client.
import { describe, expect, it } from 'vitest';
import { ClientShareTimeoutError, clientShare, shareOf } from '../../src/store/postgres/client-share.js';
import { isStoreUnavailable } from '../../src/store/store-errors.js';

/** Work that runs until its `finish` is called, counting how many of its kind run at once. */
function gate() {
  const running = new Map<number, number>();
  const finishers: (() => void)[] = [];
  const work = (clientId: number) => () => {
    running.set(clientId, (running.get(clientId) ?? 0) + 1);
    return new Promise<number>((resolve) =>
      finishers.push(() => {
        running.set(clientId, running.get(clientId)! - 1);
        resolve(clientId);
      }),
    );
  };
  const turns = () => new Promise((resolve) => setImmediate(resolve));
  return { running, work, finishOne: () => finishers.shift()?.(), turns };
}

describe('a client share of the pool', () => {
  it('is the fraction of the pool, at least one connection, and leaves one share to the rest', () => {
    expect(shareOf(10, 0.3)).toEqual({ perClient: 3, total: 7 });
    expect(shareOf(10, 1)).toEqual({ perClient: 10, total: 1 });
    expect(shareOf(2, 0.3)).toEqual({ perClient: 1, total: 1 });
    expect(shareOf(1, 0.5)).toEqual({ perClient: 1, total: 1 });
  });

  it("holds one client to its share while another client's work starts at once", async () => {
    const share = clientShare(10, 0.3, 0);
    const { running, work, finishOne, turns } = gate();
    const b = Array.from({ length: 20 }, () => share.run(2, work(2)));
    await turns();
    expect(running.get(2)).toBe(3);
    const a = share.run(1, work(1));
    await turns();
    expect(running.get(1)).toBe(1);
    // A connection given back goes to the next of B's in line.
    finishOne();
    await turns();
    expect(running.get(2)).toBe(3);
    while (running.get(2)! + (running.get(1) ?? 0) > 0) {
      finishOne();
      await turns();
    }
    expect(await Promise.all(b)).toHaveLength(20);
    expect(await a).toBe(1);
  });

  it('keeps all searches together to the pool less one share', async () => {
    const share = clientShare(10, 0.3, 0);
    const { running, work, turns } = gate();
    for (let client = 1; client <= 5; client++)
      for (let i = 0; i < 3; i++) void share.run(client, work(client));
    await turns();
    expect([...running.values()].reduce((sum, n) => sum + n, 0)).toBe(7);
  });

  it('fails a turn waited for past its bound as the store busy (503 to its client)', async () => {
    const share = clientShare(1, 1, 50);
    const { work, finishOne } = gate();
    const first = share.run(1, work(1));
    const err: unknown = await share.run(1, work(1)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ClientShareTimeoutError);
    expect(isStoreUnavailable(err)).toBe(true);
    finishOne();
    expect(await first).toBe(1);
    // The share is whole again.
    const again = share.run(1, work(1));
    finishOne();
    expect(await again).toBe(1);
  });
});
