import { afterEach, describe, expect, it } from 'vitest';
import { orderBody, US_ADDRESS } from '../helpers/fixtures.js';
import { createTestService, signed, stopChild, type TestService } from '../helpers/test-service.js';
import { until } from '../helpers/wait.js';

let service: TestService;
afterEach(() => service?.close());

const VENDOR = {
  vendorId: 801,
  name: 'Last Copy Books',
  country: 'USA',
  currency: 'USD' as const,
  rates: [
    {
      mode: 'S' as const,
      zone: 'domestic' as const,
      rate: { firstCents: 300, additionalCents: 100, minDays: 1, maxDays: 3 },
    },
  ],
};

const settledCount = () => service.probe.scalar(`SELECT count(*) FROM orders WHERE phase = 'settled'`);

/** Polls the store every 100 ms until `check` holds; fails after `timeoutMs`. */
describe('concurrent orders', () => {
  it('when 200 buyers order one copy each of a listing with 50 copies across two workers, then exactly 50 are ORDERED', async () => {
    service = await createTestService({ env: { WORKER_CONCURRENCY: '8' } });
    await service.importCatalog(
      [VENDOR],
      [
        {
          listingId: 9001,
          vendorId: 801,
          title: 'Scarce',
          isbn: '9780000000001',
          priceCents: 2000,
          quantity: 50,
        },
      ],
    );
    await Promise.all([service.startWorker(), service.startWorker()]);
    const buyers = await Promise.all(Array.from({ length: 10 }, (_, i) => service.client(`buyer ${i}`)));
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => {
        const buyer = buyers[i % buyers.length]!;
        return signed(
          service.app,
          buyer,
          'POST',
          '/v1/orders',
          orderBody(buyer.ccToken, { listings: [{ listingId: 9001, quantity: 1 }] }),
        );
      }),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    await until(async () => (await settledCount()) === 200, 60_000);
    const byStatus = await service.probe.all(
      'SELECT status, count(*) AS n FROM order_items GROUP BY status ORDER BY status',
    );
    expect(byStatus).toEqual([
      { status: 5, n: 50 },
      { status: 14, n: 150 },
    ]);
    expect(await service.stock(9001)).toBe(0);
    const authorised = await service.probe.scalar(
      `SELECT count(*) FROM ledger_entries WHERE kind = 'authorize'`,
    );
    expect(authorised).toBe(50);
  });
});

describe('a worker killed mid-job', () => {
  it('when a worker is SIGKILLed with 100 orders in flight and another starts, then every order is final and charged at most once', async () => {
    service = await createTestService({ env: { WORKER_CONCURRENCY: '4' } });
    await service.importCatalog(
      [VENDOR],
      [
        {
          listingId: 9002,
          vendorId: 801,
          title: 'Plenty',
          isbn: '9780000000002',
          priceCents: 1500,
          quantity: 1000,
        },
      ],
    );
    const buyer = await service.client('bulk buyer');
    const answers = await Promise.all(
      Array.from({ length: 100 }, () =>
        signed(
          service.app,
          buyer,
          'POST',
          '/v1/orders',
          orderBody(buyer.ccToken, { shipAddr: US_ADDRESS, listings: [{ listingId: 9002, quantity: 2 }] }),
          {
            headers: { Prefer: 'respond-async' },
          },
        ),
      ),
    );
    expect(answers.every((a) => a.headers['svc-status'] === '2010')).toBe(true);
    // Slow the worker's payments so the kill lands while jobs are active.
    const doomed = await service.startWorker({ SANDBOX_PAYMENT_LATENCY_MS: '50' });
    await until(async () => (await settledCount()) >= 10, 30_000);
    await stopChild(doomed, 'SIGKILL');
    expect(await settledCount()).toBeLessThan(100);
    await service.startWorker();
    await until(async () => (await settledCount()) === 100, 90_000);
    const items = await service.probe.all('SELECT status, count(*) AS n FROM order_items GROUP BY status');
    expect(items).toEqual([{ status: 5, n: 200 }]);
    // Each order: one authorisation at the gateway and one in the ledger, both for the order's total.
    const charges = await service.probe.all<{ total: number; authorised: number; entries: number }>(
      `SELECT o.order_id, o.total_cents AS total, p.amount_cents AS authorised,
              (SELECT count(*) FROM ledger_entries l WHERE l.order_id = o.order_id AND l.kind = 'authorize') AS entries
         FROM orders o LEFT JOIN payments p ON p.idempotency_key = 'order-' || o.order_id`,
    );
    expect(charges).toHaveLength(100);
    expect(charges.every((c) => c.authorised === c.total && c.entries === 1)).toBe(true);
    expect(await service.stock(9002)).toBe(800);
  }, 120_000);
});
