// One clock for the time two processes compare: a lease written by a worker and judged by reconciliation in
// another process agree although that process's host clock runs 4 minutes ahead (libfaketime). A worker paused
// 20 s (SIGSTOP) inside its lease still settles its orders: none is FAILED by a clock that thinks the lease ran
// out long ago. The skewed process says so in its logs.
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, signed, type TestService } from '../helpers/test-service.js';
import { sleep, until } from '../helpers/wait.js';
import { FAKETIME_LIB } from '../helpers/faketime.js';

/** A process whose host clock runs 4 minutes ahead; its timers keep real time. */
const FOUR_MINUTES_AHEAD = {
  LD_PRELOAD: FAKETIME_LIB,
  FAKETIME: '+4m',
  FAKETIME_DONT_FAKE_MONOTONIC: '1',
};

let service: TestService | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
});

describe.runIf(fs.existsSync(FAKETIME_LIB))('a clock process 4 minutes ahead', () => {
  it('fails none of the orders of a worker paused inside its lease: they are bought', async () => {
    // One attempt per order: an order whose attempt is out of the worker's hands is one reconciliation may fail,
    // once the lease of that attempt has run out, by the shared clock.
    service = await createTestService({
      env: { MAX_PROCESS_ATTEMPTS: '1', ATTEMPT_LEASE_S: '60', WORKER_CONCURRENCY: '8' },
    });
    await service.importCatalog(VENDORS, LISTINGS);
    const buyer = await service.client('buyer of a paused worker');
    // The skewed process says so as it starts (the line it is waited for).
    await service.spawn(
      'jobs/clock.ts',
      { ...FOUR_MINUTES_AHEAD, RECONCILE_CRON: '* * * * * *', LOG_LEVEL: 'info' },
      "this host's clock is off Redis's",
    );
    // The worker's payments take 3 s each: it is paused in the middle of them.
    const paused = await service.startWorker({ SANDBOX_PAYMENT_LATENCY_MS: '3000' });

    const orderIds: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await signed(service.app, buyer, 'POST', '/v1/orders', orderBody(buyer.ccToken), {
        headers: { Prefer: 'respond-async' },
      });
      expect(res.headers['svc-status']).toBe('2010');
      orderIds.push(res.body.orderId as number);
    }
    const begun = () => service!.probe.scalar<number>('SELECT count(*) FROM orders WHERE attempts >= 1');
    await until(async () => Number(await begun()) === orderIds.length, 30_000, 'every attempt begun');
    paused.kill('SIGSTOP');
    // Another worker takes the paused one's jobs once their locks run out, and finds each order's lease held;
    // reconciliation (4 minutes ahead) finds the orders old, their jobs gone and their attempts used up.
    await service.startWorker();
    await sleep(20_000);
    paused.kill('SIGCONT');

    const statuses = () =>
      service!.probe
        .all<{ status: number }>(
          `SELECT status FROM order_items WHERE order_id IN (${orderIds.join(',')}) ORDER BY order_item_id`,
        )
        .then((rows) => rows.map((row) => row.status));
    await expect.poll(statuses, { timeout: 60_000, interval: 500 }).toEqual(orderIds.map(() => 5));
  }, 150_000);
});
