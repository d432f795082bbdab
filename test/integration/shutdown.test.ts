import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childPids, processStats } from '../helpers/process-stats.js';
import { freePort } from '../../scripts/redis.js';
import { createSigningClient, type OrderResponse } from '../helpers/signed-client.js';
import { placeOrder } from '../../src/services/orders/place-order.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, signed, stopChild, type TestService } from '../helpers/test-service.js';
import { until } from '../helpers/wait.js';

let service: TestService;

beforeAll(async () => {
  service = await createTestService();
  await service.importCatalog(VENDORS, LISTINGS);
});
afterAll(() => service.close());

const count = (sql: string, ...params: unknown[]) => service.probe.scalar(sql, ...params);

/** Polls `check` every 50 ms (the stops under test are quick), 20 s at most unless told. */
const waitFor = (check: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000) =>
  until(check, timeoutMs, what, 50);

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code)),
  );

/** Every item of every order given a final or later status: none QUEUED, no order half-way through paying. */
const unsettled = () => count("SELECT count(*) FROM orders WHERE phase <> 'settled'");

describe.each<{ web: string; env: Record<string, string>; ready: string }>([
  { web: 'one web process', env: {}, ready: 'web listening' },
  { web: 'a web cluster of two', env: { WEB_CONCURRENCY: '2' }, ready: 'web cluster listening' },
])('SIGTERM to $web with orders in flight', ({ env, ready }) => {
  it('then every request in flight gets its answer, the process exits 0, and a worker later settles every order', async () => {
    const port = await freePort();
    // No worker yet: each real order waits ORDER_WAIT_MS for an outcome, so it is in flight when SIGTERM comes.
    const web = await service.spawn(
      'src/server.ts',
      { ...env, PORT: String(port), ORDER_WAIT_MS: '2000' },
      ready,
    );
    const buyer = await service.client('shutdown buyer');
    const client = createSigningClient({ baseUrl: `http://127.0.0.1:${port}`, ...buyer });
    const before = await count('SELECT count(*) FROM orders');
    const answers = Array.from({ length: 6 }, () =>
      client.request('POST', '/v1/orders', orderBody(buyer.ccToken)),
    );
    await waitFor(
      async () => (await count('SELECT count(*) FROM orders')) === before + 6,
      'six accepted orders',
    );

    web.kill('SIGTERM');
    const responses = await Promise.all(answers);
    expect(await exited(web)).toBe(0);
    expect(responses.map((r) => r.status)).toEqual(Array(6).fill(200));
    expect(responses.map((r) => r.svcStatus)).toEqual(Array(6).fill([2010]));
    const orders = responses.map((r) => r.body as OrderResponse);
    expect(orders.every((o) => o.listings[0]!.orderItems[0]!.status === 1)).toBe(true);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();

    const worker = await service.startWorker();
    await waitFor(async () => (await unsettled()) === 0, 'the worker to settle every order');
    await stopChild(worker);
    const ids = orders.map((o) => o.orderId);
    const statuses = await service.probe.all<{ status: number }>(
      `SELECT DISTINCT status FROM order_items WHERE order_id IN (${ids.join(',')})`,
    );
    expect(statuses.map((s) => s.status)).toEqual([5]);
  });
});

describe('SIGTERM to a worker with jobs in flight', () => {
  it('then it finishes the jobs it holds, exits 0, leaves the rest waiting, and nothing is lost or charged twice', async () => {
    const buyer = await service.client('worker shutdown buyer');
    const placed = [];
    for (let i = 0; i < 12; i++) {
      const res = await signed(service.app, buyer, 'POST', '/v1/orders', orderBody(buyer.ccToken), {
        headers: { Prefer: 'respond-async' },
      });
      placed.push(res.body.orderId as number);
    }
    // A slow payment processor keeps four jobs in the worker's hands for a second and a half.
    const worker = await service.startWorker({ WORKER_CONCURRENCY: '4', SANDBOX_PAYMENT_LATENCY_MS: '1500' });
    const queue = service.deps.queue.queue;
    await waitFor(async () => (await queue.getActiveCount()) === 4, 'four active jobs');

    const stopping = Date.now();
    worker.kill('SIGTERM');
    expect(await exited(worker)).toBe(0);
    expect(Date.now() - stopping).toBeLessThan(10_000);
    const settledNow = await count(
      `SELECT count(*) FROM orders WHERE phase = 'settled' AND order_id IN (${placed.join(',')})`,
    );
    expect(await count("SELECT count(*) FROM orders WHERE phase = 'reserved'")).toBe(0);
    expect(settledNow).toBeGreaterThanOrEqual(4);
    expect(await queue.getActiveCount()).toBe(0);
    expect(await queue.getWaitingCount()).toBe(12 - settledNow);

    const next = await service.startWorker();
    await waitFor(async () => (await unsettled()) === 0, 'a new worker to settle the rest');
    await stopChild(next);
    const rows = await service.probe.all<{ id: number; status: number; authorizations: number }>(
      `SELECT o.order_id AS id, i.status, (SELECT count(*) FROM ledger_entries l
         WHERE l.order_id = o.order_id AND l.kind = 'authorize') AS authorizations
       FROM orders o JOIN order_items i USING (order_id) WHERE o.order_id IN (${placed.join(',')})`,
    );
    expect(rows).toHaveLength(12);
    expect(rows.every((r) => r.status === 5 && r.authorizations === 1)).toBe(true);
  });
});

describe('SIGTERM to the clock while a reconciliation pass is requeueing orders', () => {
  let stale: TestService;
  const past = Date.now() - 10 * 60_000;
  beforeAll(async () => {
    // Accepted ten minutes ago, their jobs since lost by Redis: what a pass enqueues again, one by one.
    stale = await createTestService({ clock: () => past });
    await stale.importCatalog(VENDORS, LISTINGS);
  });
  afterAll(() => stale.close());

  it('then the pass finishes, the clock exits 0 and frees its lock, and every order is settled afterwards', async () => {
    const buyer = await stale.client('stale buyer');
    for (let i = 0; i < 1000; i++) {
      const requestId = crypto.randomUUID();
      const placed = await placeOrder(
        { ...stale.deps, orderWaitMs: 0 },
        {
          clientId: buyer.clientId,
          requestId,
          requestHash: requestId,
          body: orderBody(buyer.ccToken),
          respondAsync: true,
          log: stale.deps.logger,
        },
      );
      expect(placed.kind).toBe('placed');
    }
    const queue = stale.deps.queue.queue;
    await queue.drain(true);
    expect(await queue.getWaitingCount()).toBe(0);

    const clock = await stale.spawn('jobs/clock.ts', { RECONCILE_CRON: '* * * * * *' }, 'clock ready');
    await waitFor(async () => (await queue.getWaitingCount()) > 0, 'the pass to requeue a first order');
    clock.kill('SIGTERM');
    expect(await exited(clock)).toBe(0);
    expect(await stale.deps.redis.exists(`${stale.config.REDIS_PREFIX}:reconcile:lock`)).toBe(0);
    const requeued = await queue.getWaitingCount();
    expect(requeued).toBeGreaterThan(0);

    await stale.startWorker({ WORKER_CONCURRENCY: '32' });
    await stale.spawn('jobs/clock.ts', { RECONCILE_CRON: '* * * * * *' }, 'clock ready');
    const left = () => stale.probe.scalar("SELECT count(*) FROM orders WHERE phase <> 'settled'");
    await waitFor(async () => (await left()) === 0, 'every order to be settled', 120_000);
    // Walden has 50 copies: the first 50 orders settled get one, the rest find it sold out.
    const byStatus = await stale.probe.all(
      'SELECT status, count(*) AS n FROM order_items GROUP BY status ORDER BY status',
    );
    expect(byStatus).toEqual([
      { status: 5, n: 50 },
      { status: 14, n: 950 },
    ]);
    // A thousand orders placed, requeued and settled: minutes on a loaded two-core machine.
  }, 300_000);
});

describe('a web cluster (WEB_CONCURRENCY=2) when one of its web processes dies', () => {
  it('then the primary starts another on the same port, and SIGTERM still stops them all with exit 0', async () => {
    const port = await freePort();
    const primary = await service.spawn(
      'src/server.ts',
      { PORT: String(port), WEB_CONCURRENCY: '2' },
      'web cluster listening',
    );
    const [first, second] = childPids(primary.pid!);
    expect(second).toBeDefined();
    process.kill(first!, 'SIGKILL');
    await waitFor(() => {
      const now = childPids(primary.pid!);
      return now.length === 2 && !now.includes(first!);
    }, 'a replacement web process');
    await waitFor(
      async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null))?.ok === true,
      'web',
    );
    const workers = childPids(primary.pid!);
    primary.kill('SIGTERM');
    expect(await exited(primary)).toBe(0);
    expect(workers.filter((pid) => processStats(pid) !== null)).toEqual([]);
  });
});
