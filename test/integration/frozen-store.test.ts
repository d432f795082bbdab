// A store link that freezes without closing (a dead switch, a paused host: the connections stay open and no
// byte passes) holds no request for long: under load, PostgreSQL frozen 20 s. Every request is answered within
// a few seconds (503 / 5030 with Retry-After), the service serves again within seconds of the thaw, every
// accepted order ends final and money is exact.
import { describe, expect, inject, it } from 'vitest';
import { LISTINGS, VENDORS } from '../helpers/fixtures.js';
import {
  CLOCK_ENV,
  expectServedThrough,
  FAULT_ENV,
  freezeUnderLoad,
  frozenLinkTest,
  proxied,
} from '../helpers/freeze-load.js';
import { TEST_STORE, THROUGH_PGBOUNCER } from '../helpers/test-store.js';
import { createTestService } from '../helpers/test-service.js';

const made = frozenLinkTest();

describe.runIf(TEST_STORE === 'postgres' && !THROUGH_PGBOUNCER)('the store frozen 20 s under load', () => {
  it('answers 503 / 5030 within a few seconds, serves again after the thaw, and loses nothing', async () => {
    // One proxy in front of the run's PostgreSQL server; every process of the service reaches its database
    // through it.
    const server = await proxied(inject('postgresUrl')!);
    const link = (made.link = server.proxy);
    const service = (made.service = await createTestService({
      env: { ...FAULT_ENV, DB_POOL_SIZE: '4' },
      storeEnv: (env) => {
        const url = new URL(env.DATABASE_URL!);
        url.host = new URL(server.url).host;
        return { ...env, DATABASE_URL: url.toString() };
      },
    }));
    await service.importCatalog(VENDORS, LISTINGS);
    // A session cut off inside a transaction is ended by the server after 10 s, its locks freed.
    expect(await service.deps.store.settings()).toMatchObject({
      idle_in_transaction_session_timeout: '10000',
    });
    await service.startWorker();
    await service.spawn('jobs/clock.ts', CLOCK_ENV, 'clock ready');

    // More callers than connections: some wait for a connection behind statements that wait for the store.
    const run = await freezeUnderLoad(service, link, 10);

    await expectServedThrough(service, run, 'the store');
    const refused = run.during.filter((s) => s.svcStatus !== '2010');
    expect(refused.length, 'requests refused while the store was frozen').toBeGreaterThan(0);
    for (const s of refused) {
      expect(s.svcStatus).toBe('5030');
      expect(Number(s.retryAfter)).toBeGreaterThan(0);
    }
  }, 150_000);
});
