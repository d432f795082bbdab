// A Redis link that freezes without closing (a dead switch, a paused host: the connections stay open and no
// byte passes) holds no request for long: under load, Redis frozen 20 s. Every request is answered within a few
// seconds (the lockout and rate-limit checks fail open, an order is stored and enqueued later), the service
// serves again within seconds of the thaw, every accepted order ends final and money is exact.
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
import { createTestService } from '../helpers/test-service.js';

const made = frozenLinkTest();

describe('Redis frozen 20 s under load', () => {
  it('holds no request longer than a few seconds, serves again after the thaw, and loses nothing', async () => {
    const redis = await proxied(inject('redisUrl'));
    const link = (made.link = redis.proxy);
    const service = (made.service = await createTestService({ env: { ...FAULT_ENV, REDIS_URL: redis.url } }));
    await service.importCatalog(VENDORS, LISTINGS);
    await service.startWorker();
    await service.spawn('jobs/clock.ts', CLOCK_ENV, 'clock ready');

    const run = await freezeUnderLoad(service, link, 4);

    await expectServedThrough(service, run, 'Redis');
    // The lockout and rate-limit checks fail open and the order is stored: accepted, enqueued later.
    expect(run.during.filter((s) => s.svcStatus !== '2010' && s.svcStatus !== '5030')).toEqual([]);
  }, 150_000);
});
