import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { LISTINGS, orderBody, VENDORS } from '../helpers/fixtures.js';
import { createTestService, signed, stopChild, type TestService } from '../helpers/test-service.js';
import { until } from '../helpers/wait.js';

// A job whose worker dies under it again and again until BullMQ gives up on it (more stalls than
// maxStalledCount): the caller waiting for the order is answered then, not at the end of its wait.

let service: TestService;
let redis: Redis | undefined;
afterEach(async () => {
  redis?.disconnect();
  await service?.close();
});

// Every attempt hangs in the payment processor until its worker is killed.
const HANGING = { SANDBOX_PAYMENT_LATENCY_MS: '600000' };

describe('an order whose job stalls more often than BullMQ allows', () => {
  it('when BullMQ fails the job, then the caller waiting for the order is answered at once with its items QUEUED', async () => {
    // A wait of four minutes: the stalls take about one, so an answer within a minute of the job's failure came
    // from its end, not from the end of the wait.
    service = await createTestService({ env: { ORDER_WAIT_MS: '240000' } });
    await service.importCatalog(VENDORS, LISTINGS);
    const buyer = await service.client('patient buyer');
    redis = new Redis(service.env.REDIS_URL);
    let worker: ChildProcess = await service.startWorker(HANGING);
    let answeredAt = 0;
    const answer = signed(service.app, buyer, 'POST', '/v1/orders', orderBody(buyer.ccToken)).then((res) => {
      answeredAt = Date.now();
      return res;
    });
    await until(
      async () => (await service.probe.scalar<number>('SELECT count(*) FROM orders')) === 1,
      30_000,
    );
    const orderId = await service.probe.scalar<number>('SELECT max(order_id) FROM orders');
    const jobKey = `${service.config.REDIS_PREFIX}:orders:order-${orderId}`;
    const activeKey = `${service.config.REDIS_PREFIX}:orders:active`;
    const stalls = async () => Number((await redis!.hget(jobKey, 'stc')) ?? 0);
    const running = async () => (await redis!.lpos(activeKey, `order-${orderId}`)) !== null;

    // maxStalledCount is 2: the third stall fails the job (in the worker that takes it next).
    for (let stall = 1; stall <= 3; stall++) {
      await until(running, 60_000);
      await stopChild(worker, 'SIGKILL');
      worker = await service.startWorker(HANGING);
      await until(async () => (await stalls()) === stall, 60_000);
    }
    const failedAt = Date.now();
    const res = await answer;

    expect(answeredAt - failedAt).toBeLessThan(60_000);
    expect(res.body.orderId).toBe(orderId);
    expect(res.body.listings[0].orderItems.map((item: { status: number }) => item.status)).toEqual([1]);
  }, 300_000);
});
