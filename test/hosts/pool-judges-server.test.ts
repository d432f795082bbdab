// The pool's fail-fast (DATABASE_TIMEOUT_MS) judges the server, not one statement: a statement given up on while
// the server answered others (one client's slow search) makes no later caller fail at once, while a server that
// answered nothing since still fails the callers who would wait for a connection, at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, StoreTimeoutError } from '../../src/store/postgres/postgres.pool.js';
import { createTestService, type TestService } from '../helpers/test-service.js';

const TIMEOUT_MS = 500;
/** For a caller that must be served behind 0.2 s statements: room for a busy machine (CI runs 4 files at once). */
const ROOMY_TIMEOUT_MS = 3000;
let service: TestService;

beforeAll(async () => {
  service = await createTestService();
});
afterAll(() => service?.close());

/**
 * A pool of two connections on the service's database, bounded by `timeoutMs`, with no statement_timeout (as
 * through a pooler): a statement past the bound is given up on by the pool itself.
 */
const twoConnections = (timeoutMs = TIMEOUT_MS) =>
  createPool((service.env as Record<string, string>).DATABASE_URL!, {
    poolSize: 2,
    pooling: 'transaction',
    timeoutMs,
  });

/** Once the pool has handed its idle connections to the callers before (it does so on the next tick). */
const turnsPassed = () => new Promise((resolve) => setImmediate(resolve));

/** Whether `promise` has settled yet (after the turns already queued). */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await turnsPassed();
  return done;
}

describe("the pool's fail-fast (PostgreSQL)", () => {
  it('a statement given up on while the server answered another fails no later caller at once', async () => {
    const pool = twoConnections(ROOMY_TIMEOUT_MS);
    try {
      // Both connections made first, so that the slow statement is sent before the quick one is answered. Made on
      // demand, the slow one's connection could come up after that answer on a busy machine: nothing would then
      // have been answered since it was sent, and the pool would rightly judge the server unanswering.
      await Promise.all([pool.query('SELECT 1'), pool.query('SELECT 1')]);
      const slow = pool.query('SELECT pg_sleep(30)').catch((e: unknown) => e);
      expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      expect(await slow).toBeInstanceOf(StoreTimeoutError);
      // Both connections busy: the next caller waits for one and is served.
      const busy = [pool.query('SELECT pg_sleep(0.2)'), pool.query('SELECT pg_sleep(0.2)')];
      await turnsPassed();
      const next = await pool.query('SELECT 2 AS two').catch((e: unknown) => e);
      expect(next).toMatchObject({ rows: [{ two: 2 }] });
      await Promise.all(busy);
    } finally {
      await pool.end();
    }
  }, 20_000);

  it('a server that answered nothing since fails at once a caller who would wait for a connection', async () => {
    const pool = twoConnections();
    try {
      // Each one's failure taken from the start: both are given up on at once, and the second must not fail unheard
      // while the first is awaited.
      const slow = [pool.query('SELECT pg_sleep(30)'), pool.query('SELECT pg_sleep(30)')].map((p) =>
        p.catch((e: unknown) => e),
      );
      for (const one of slow) expect(await one).toBeInstanceOf(StoreTimeoutError);
      const busy = [pool.query('SELECT pg_sleep(30)'), pool.query('SELECT pg_sleep(30)')].map((p) =>
        p.catch((e: unknown) => e),
      );
      await turnsPassed();
      const next = pool.query('SELECT 1').catch((e: unknown) => e);
      expect(await next).toBeInstanceOf(StoreTimeoutError);
      // It failed before the statements it would have waited behind were given up on.
      expect(await settled(Promise.race(busy))).toBe(false);
      await Promise.all(busy);
    } finally {
      await pool.end();
    }
  }, 20_000);
});
