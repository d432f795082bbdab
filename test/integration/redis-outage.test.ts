import { afterEach, describe, expect, it } from 'vitest';
import { startPrivateRedis, type RunningRedis } from '../../scripts/redis.js';
import { paymentKey } from '../../src/payments/payment-gateway.js';
import { startAttempt } from '../../src/services/process-order.js';
import { processOrder } from '../helpers/process-order.js';
import { runReconcilePass, type PassResult } from '../../src/services/reconcile.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';
import { sleep, logLines, until } from '../helpers/wait.js';

const WALDEN = 2002;

let service: TestService;
let buyer: Credentials;
let redis: RunningRedis;

afterEach(async () => {
  await service?.close();
  await redis?.stop();
});

/** A service whose Redis is a private server that the test may stop and start again on the same port. */
async function start(env: Record<string, string> = {}) {
  redis = await startPrivateRedis();
  service = await createTestService({ env: { REDIS_URL: redis.url, ...env } });
  await service.importCatalog(VENDORS, LISTINGS);
  buyer = await service.client('outage buyer');
}

async function restartRedis(): Promise<void> {
  await redis.stop();
  redis = await startPrivateRedis(Number(new URL(redis.url).port));
}

const count = (sql: string, ...params: unknown[]) => service.probe.scalar(sql, ...params);

/** Polls the store every 100 ms until `check` holds; fails naming `what` after `timeoutMs`. */
function post(options: { async?: boolean } = {}) {
  const body = orderBody(buyer.ccToken, { listings: [{ listingId: WALDEN, quantity: 2 }] });
  return signed(service.app, buyer, 'POST', '/v1/orders', body, {
    headers: options.async ? { Prefer: 'respond-async' } : {},
  });
}

const statuses = (body: { listings: { orderItems: { status: number }[] }[] }) =>
  body.listings.flatMap((l) => l.orderItems.map((i) => i.status));

/** Each order charged once: one authorisation for its total, one authorize entry, no adjustment. */
async function expectChargedOnce(orderId: number) {
  const total = await count('SELECT total_cents FROM orders WHERE order_id = ?', orderId);
  expect(
    await count('SELECT amount_cents FROM payments WHERE idempotency_key = ?', paymentKey(orderId)),
  ).toBe(total);
  expect(
    await count(`SELECT count(*) FROM ledger_entries WHERE order_id = ? AND kind = 'authorize'`, orderId),
  ).toBe(1);
  expect(await count('SELECT payment_version FROM orders WHERE order_id = ?', orderId)).toBe(0);
}

describe('when Redis is down as an order is accepted', () => {
  it('then the order is stored and answered 2010 QUEUED, and once Redis is back the clock enqueues it and a worker completes it', async () => {
    await start({ QUEUED_STALE_AFTER_S: '1' });
    const clock = await service.spawn('jobs/clock.ts', { RECONCILE_CRON: '* * * * * *' }, 'clock ready');
    const clockLog = logLines(clock);
    await service.startWorker();
    const stock = await service.stock(WALDEN);
    await redis.stop();

    const startedAt = Date.now();
    const res = await post();
    expect(Date.now() - startedAt).toBeLessThan(5000);
    expect(res.status).toBe(200);
    expect(res.headers['svc-status']).toBe('2010');
    expect(statuses(res.body)).toEqual([1, 1]);
    const orderId = res.body.orderId as number;
    await sleep(1500); // clock ticks that cannot reach Redis
    expect(await count('SELECT count(*) FROM order_items WHERE order_id = ? AND status = 1', orderId)).toBe(
      2,
    );

    await restartRedis();
    await until(
      async () => (await count(`SELECT count(*) FROM order_items WHERE status = 5`)) === 2,
      30_000,
      'order completed',
    );
    const got = await signed(service.app, buyer, 'GET', `/v1/orders/${orderId}`);
    expect(statuses(got.body)).toEqual([5, 5]);
    expect(await service.stock(WALDEN)).toBe(stock - 2);
    await expectChargedOnce(orderId);
    const passes = clockLog.filter((l) => l.msg === 'reconcile pass done');
    expect(passes.reduce((n, p) => n + Number(p.requeued ?? 0), 0)).toBe(1);
  }, 60_000);
});

describe('when Redis restarts empty with orders queued', () => {
  it('then reconciliation completes every order and none is charged twice', async () => {
    await start();
    const stock = await service.stock(WALDEN);
    const processDeps = { ...service.deps, maxAttempts: service.config.MAX_PROCESS_ATTEMPTS };
    const settled = [];
    for (let i = 0; i < 2; i += 1) {
      const orderId = (await post({ async: true })).body.orderId as number;
      await processOrder(processDeps, orderId);
      settled.push(orderId);
    }
    // A worker that was charged by the gateway and died before recording it.
    const charged = (await post({ async: true })).body.orderId as number;
    const step = await startAttempt({ ...processDeps, maxAttempts: 5 }, charged);
    if (step.kind !== 'pay') throw new Error(`expected a payment step, got ${step.kind}`);
    const { order } = step.stored;
    await service.deps.payments.authorize({
      key: paymentKey(charged),
      cardId: order.cardId,
      amountCents: order.totalCents!,
      currency: order.currency,
    });
    const queued = [];
    for (let i = 0; i < 4; i += 1) queued.push((await post({ async: true })).body.orderId as number);
    expect(await service.deps.queue.queue.getWaitingCount()).toBe(7);

    await restartRedis();
    await service.startWorker();
    const pass = () => runReconcilePass(service.deps, { now: Date.now() + 121_000 });
    expect(await retryWhileReconnecting(pass)).toMatchObject({
      ran: true,
      counts: { requeued: 5, failed: 0 },
    });
    await until(
      async () => (await count(`SELECT count(*) FROM orders WHERE phase = 'settled'`)) === 7,
      30_000,
      'orders settled',
    );

    expect(await count('SELECT count(*) FROM order_items WHERE status = 5')).toBe(14);
    expect(await service.stock(WALDEN)).toBe(stock - 14);
    for (const orderId of [...settled, charged, ...queued]) await expectChargedOnce(orderId);
    expect(await pass()).toMatchObject({ ran: true, counts: { requeued: 0, failed: 0 } });
  }, 60_000);
});

/** The service's own connections come back by themselves a moment after Redis does, as a clock's would. */
async function retryWhileReconnecting(pass: () => Promise<PassResult>): Promise<PassResult> {
  for (let attempt = 1; ; attempt += 1) {
    const result = await pass().catch((): PassResult => ({ ran: false, reason: 'redis unavailable' }));
    if (result.ran || attempt >= 50) return result;
    await sleep(100);
  }
}
