// SIGTERM to a worker whose Redis link freezes (no byte passes, the connection stays open) while it holds a job:
// the job cannot be marked finished nor its metrics sent, and the worker still stops cleanly within its shutdown
// grace (exit 0, not the grace's exit 1), leaving the job to be taken over once the link is back.
import { Redis } from 'ioredis';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { LISTINGS, orderBody, VENDORS } from '../helpers/fixtures.js';
import { proxied } from '../helpers/freeze-load.js';
import type { TcpProxy } from '../helpers/tcp-proxy.js';
import { createTestService, signed, stopChild, type TestService } from '../helpers/test-service.js';
import { until } from '../helpers/wait.js';

let service: TestService | undefined;
let link: TcpProxy | undefined;
let redis: Redis | undefined;
afterEach(async () => {
  link?.pass();
  redis?.disconnect();
  await service?.close();
  await link?.close();
});

describe('SIGTERM to a worker whose Redis link is frozen while it holds a job', () => {
  it('then it exits 0 within its shutdown grace, and after the thaw another worker settles the order', async () => {
    const proxy = await proxied(inject('redisUrl'));
    link = proxy.proxy;
    service = await createTestService();
    await service.importCatalog(VENDORS, LISTINGS);
    const buyer = await service.client('buyer');
    redis = new Redis(service.env.REDIS_URL);
    // Only the worker goes through the proxy; its payment is slow enough for the freeze to land mid-job.
    const worker = await service.startWorker({ REDIS_URL: proxy.url, SANDBOX_PAYMENT_LATENCY_MS: '3000' });
    const placed = await signed(service.app, buyer, 'POST', '/v1/orders', orderBody(buyer.ccToken), {
      headers: { Prefer: 'respond-async' },
    });
    const activeKey = `${service.config.REDIS_PREFIX}:orders:active`;
    await until(async () => (await redis!.llen(activeKey)) === 1, 30_000, 'the job taken');

    link.freeze();
    expect(await stopChild(worker, 'SIGTERM')).toBe(0);

    link.pass();
    await service.startWorker();
    const phase = () => service!.deps.store.orders.phaseOf(placed.body.orderId as number);
    await until(async () => (await phase()) === 'settled', 60_000, 'the order settled');
  }, 120_000);
});
