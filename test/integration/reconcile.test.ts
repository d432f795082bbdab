import { UnrecoverableError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { startPrivateRedis, type RunningRedis } from '../../scripts/redis.js';
import { reconcile } from '../../src/cli/commands/reconcile.commands.js';
import { orderJobId } from '../../src/queue/order.queue.js';
import { withLock } from '../../src/redis/redis-lock.js';
import { moveItem } from '../../src/services/item-lifecycle.js';
import { startAttempt } from '../../src/services/process-order.js';
import { processOrder } from '../helpers/process-order.js';
import { runReconcilePass, type ReconcileCounts } from '../../src/services/reconcile.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import {
  createTestService,
  signed,
  stopChild,
  type Credentials,
  type TestService,
} from '../helpers/test-service.js';
import { ledgerBalance } from '../helpers/ledger.js';
import { runAdmin, sleep, logLines, until } from '../helpers/wait.js';

const WALDEN = 2002;
const HOUR = 3_600_000;
const T0 = Date.parse('2026-03-02T09:00:00.000Z');
const NOTHING: ReconcileCounts = {
  requeued: 0,
  failed: 0,
  unshipped: 0,
  extraShippingTimedOut: 0,
  adjustmentsApplied: 0,
  paymentTargetsBelowZero: 0,
};

let service: TestService;
let buyer: Credentials;
let redis: RunningRedis | undefined;
/** The service's fixed clock: it moves only when a test moves it. */
let now = T0;

afterEach(async () => {
  await service?.close();
  await redis?.stop();
  redis = undefined;
});

async function start(env: Record<string, string> = {}, startAt = T0) {
  now = startAt;
  service = await createTestService({ env, clock: () => now });
  await service.importCatalog(VENDORS, LISTINGS);
  buyer = await service.client('reconcile buyer');
}

const iso = (ms: number) => new Date(ms).toISOString();
const at = () => ({ date: iso(now) });

/** An order accepted as a client places it; processed by the worker's own function unless `queued`. */
async function placeOrder(quantity: number, queued = false) {
  const res = await signed(
    service.app,
    buyer,
    'POST',
    '/v1/orders',
    orderBody(buyer.ccToken, { listings: [{ listingId: WALDEN, quantity }] }),
    {
      ...at(),
      headers: { Prefer: 'respond-async' },
    },
  );
  expect(res.body.orderId).toBeGreaterThan(0);
  const orderId = res.body.orderId as number;
  if (!queued)
    await processOrder({ ...service.deps, maxAttempts: service.config.MAX_PROCESS_ATTEMPTS }, orderId);
  return { orderId, ids: await itemIds(orderId) };
}

const itemIds = async (orderId: number) =>
  (
    await service.probe.all<{ order_item_id: number }>(
      'SELECT order_item_id FROM order_items WHERE order_id = ? ORDER BY order_item_id',
      orderId,
    )
  ).map((row) => row.order_item_id);

async function moveTo(orderItemId: number, to: number, extraShippingCents?: number) {
  const outcome = await moveItem(service.deps, {
    orderItemId,
    to,
    ...(extraShippingCents ? { extraShippingCents } : {}),
  });
  expect(outcome.kind).toBe('moved');
}

async function statuses(orderId: number): Promise<number[]> {
  const res = await signed(service.app, buyer, 'GET', `/v1/orders/${orderId}`, undefined, at());
  return res.body.listings.flatMap((l: { orderItems: { status: number }[] }) =>
    l.orderItems.map((i) => i.status),
  );
}

const balance = (orderId: number) => ledgerBalance(service.probe, orderId);

async function expectBalanced(orderId: number) {
  const { ledger, bought, gateway } = await balance(orderId);
  expect([ledger, gateway]).toEqual([bought, bought]);
}

/** The items a client finds with itemUpdateDateStart = `since`, as [orderItemId, status, itemUpdateDate]. */
async function updatedSince(since: number) {
  const query = `/v1/orders?dateStart=${iso(T0 - HOUR)}&itemUpdateDateStart=${iso(since)}`;
  const res = await signed(service.app, buyer, 'GET', query, undefined, at());
  expect(res.status).toBe(200);
  return res.body.orders.flatMap(
    (o: { listings: { orderItems: { orderItemId: number; status: number; itemUpdateDate: string }[] }[] }) =>
      o.listings.flatMap((l) => l.orderItems.map((i) => [i.orderItemId, i.status, i.itemUpdateDate])),
  );
}

/** One pass at `atTime` on the fixed clock: what it changed. */
async function pass(atTime: number): Promise<ReconcileCounts> {
  now = atTime;
  const result = await runReconcilePass(service.deps);
  if (!result.ran) throw new Error(`no pass ran: ${result.reason}`);
  return result.counts;
}

describe('reconciliation with a fixed clock', () => {
  it('when items wait past their deadlines, then each becomes 14 or 90 exactly once, with stock, ledger and search following', async () => {
    await start();
    const { orderId, ids } = await placeOrder(4);
    const [unshipped, unanswered, accepted, shipped] = ids as [number, number, number, number];
    await moveTo(shipped, 35);
    now = T0 + 1 * HOUR;
    await moveTo(unanswered, 93, 300);
    await moveTo(accepted, 93, 150);
    now = T0 + 2 * HOUR;
    await moveTo(accepted, 4);
    const stock = await service.stock(WALDEN);

    // Deadlines are strict: at exactly 48 h after the request nothing has timed out yet.
    expect(await pass(T0 + 49 * HOUR)).toEqual(NOTHING);
    expect(await pass(T0 + 49 * HOUR + 1)).toEqual({ ...NOTHING, extraShippingTimedOut: 1 });
    expect(await statuses(orderId)).toEqual([5, 90, 4, 35]);
    expect(await service.stock(WALDEN)).toBe(stock + 1);
    expect(await updatedSince(T0 + 49 * HOUR)).toEqual([[unanswered, 90, iso(T0 + 49 * HOUR + 1)]]);

    expect(await pass(T0 + 96 * HOUR)).toEqual(NOTHING);
    expect(await pass(T0 + 96 * HOUR + 1)).toEqual({ ...NOTHING, unshipped: 1 });
    // The ship deadline of an accepted extra shipping runs from the acceptance.
    expect(await pass(T0 + 98 * HOUR + 1)).toEqual({ ...NOTHING, unshipped: 1 });
    expect(await pass(T0 + 98 * HOUR + 2)).toEqual(NOTHING);
    expect(await statuses(orderId)).toEqual([14, 90, 14, 35]);
    expect(await service.stock(WALDEN)).toBe(stock + 3);
    await expectBalanced(orderId);
    expect(await updatedSince(T0 + 96 * HOUR)).toEqual([
      [unshipped, 14, iso(T0 + 96 * HOUR + 1)],
      [accepted, 14, iso(T0 + 98 * HOUR + 1)],
    ]);
    const voids = await service.probe.all<{ order_item_id: number }>(
      `SELECT order_item_id, amount_cents FROM ledger_entries WHERE kind = 'void' ORDER BY order_item_id`,
    );
    expect(voids.map((v) => v.order_item_id)).toEqual([unshipped, unanswered, accepted]);
  });

  it('when a queued order’s job is lost, then it is enqueued again once it is stale, and left alone while its job waits', async () => {
    await start();
    const { orderId, ids } = await placeOrder(1, true);
    const queue = service.deps.queue.queue;
    expect(await queue.getJobState(orderJobId(orderId))).toBe('waiting');
    expect(await pass(T0 + 121_000)).toEqual(NOTHING);
    await queue.remove(orderJobId(orderId));
    expect(await pass(T0 + 120_000)).toEqual(NOTHING);
    expect(await pass(T0 + 120_001)).toEqual({ ...NOTHING, requeued: 1 });
    expect(await queue.getJobState(orderJobId(orderId))).toBe('waiting');
    expect(await pass(T0 + 180_000)).toEqual(NOTHING);
    expect(await statuses(orderId)).toEqual([1]);
    expect(await service.probe.scalar('SELECT status FROM order_items WHERE order_item_id = ?', ids[0])).toBe(
      1,
    );
  });

  it('when BullMQ fails a queued order’s job for stalling, then the order is enqueued again once it is stale', async () => {
    await start();
    const { orderId } = await placeOrder(1, true);
    const queue = service.deps.queue.queue;
    // What BullMQ does to a job that stalled more than maxStalledCount: failed at once, its attempts left unused.
    const connection = new Redis(service.env.REDIS_URL!, { maxRetriesPerRequest: null });
    const worker = new Worker(queue.name, null, { connection, prefix: queue.opts.prefix });
    try {
      const job = (await worker.getNextJob('stalled-token'))!;
      expect(job.id).toBe(orderJobId(orderId));
      await job.moveToFailed(
        new UnrecoverableError('job stalled more than allowable limit'),
        'stalled-token',
        false,
      );
    } finally {
      await worker.close();
      connection.disconnect();
    }
    expect(await queue.getJobState(orderJobId(orderId))).toBe('failed');
    expect(await pass(T0 + 120_000)).toEqual(NOTHING);
    expect(await pass(T0 + 120_001)).toEqual({ ...NOTHING, requeued: 1 });
    expect(await queue.getJobState(orderJobId(orderId))).toBe('waiting');
    expect(await pass(T0 + 180_000)).toEqual(NOTHING);
    expect(await statuses(orderId)).toEqual([1]);
  });

  it('when a queued order has used its last attempt, then it becomes FAILED and its reserved stock comes back', async () => {
    await start({ MAX_PROCESS_ATTEMPTS: '1' });
    const stock = await service.stock(WALDEN);
    const { orderId } = await placeOrder(2, true);
    await service.deps.queue.queue.remove(orderJobId(orderId));
    // A worker that reserved the stock and died: the order's one attempt is spent.
    expect((await startAttempt({ ...service.deps, maxAttempts: 1 }, orderId)).kind).toBe('pay');
    expect(await service.stock(WALDEN)).toBe(stock - 2);
    expect(await pass(T0 + 121_000)).toEqual({ ...NOTHING, failed: 1 });
    expect(await statuses(orderId)).toEqual([60, 60]);
    expect(await service.stock(WALDEN)).toBe(stock);
    expect(await count('SELECT count(*) FROM ledger_entries WHERE order_id = ?', orderId)).toBe(0);
    expect(await pass(T0 + 122_000)).toEqual(NOTHING);
  });

  it('when the gateway fails after a move commits, then the ledger entry waits and the next pass applies it once', async () => {
    await start();
    const { orderId, ids } = await placeOrder(2);
    const down = {
      ...service.deps,
      payments: { ...service.deps.payments, settleTo: () => Promise.reject(new Error('gateway down')) },
    };
    expect((await moveItem(down, { orderItemId: ids[0]!, to: 17 })).kind).toBe('moved');
    const { ledger, bought, gateway } = await balance(orderId);
    expect(ledger).toBe(bought);
    expect(gateway).toBeGreaterThan(bought);
    expect(await pass(T0 + 60_000)).toEqual({ ...NOTHING, adjustmentsApplied: 1 });
    await expectBalanced(orderId);
    expect(await pass(T0 + 120_000)).toEqual(NOTHING);
    await expectBalanced(orderId);
  });
});

describe('an interrupted pass', () => {
  it('when a pass stops after its first batch, then the next pass moves the rest and nothing twice', async () => {
    await start();
    await service.importCatalog(
      [],
      [{ ...LISTINGS[3]!, listingId: 2099, title: 'Walden, school edition', quantity: 300 }],
    );
    const res = await signed(
      service.app,
      buyer,
      'POST',
      '/v1/orders',
      orderBody(buyer.ccToken, { listings: [{ listingId: 2099, quantity: 201 }] }),
      { ...at(), headers: { Prefer: 'respond-async' } },
    );
    const orderId = res.body.orderId as number;
    await processOrder({ ...service.deps, maxAttempts: 5 }, orderId);
    now = T0 + 97 * HOUR;
    const stop = new AbortController();
    stop.abort(); // as a shutdown does: the pass ends after the batch in hand
    const first = await runReconcilePass(service.deps, { signal: stop.signal });
    expect(first).toEqual({ ran: true, counts: { ...NOTHING, unshipped: 200 } });
    expect(await pass(now)).toEqual({ ...NOTHING, unshipped: 1 });
    expect(
      await count(`SELECT count(*) FROM ledger_entries WHERE order_id = ? AND kind = 'void'`, orderId),
    ).toBe(201);
    expect(await service.stock(2099)).toBe(300);
    await expectBalanced(orderId);
  });
});

const admin = (args: string[]) => runAdmin(service.env, args);

describe('admin reconcile --now', () => {
  it('when an operator runs a pass at a given time, then it prints what it changed, stamped with the real time, and a second run changes nothing', async () => {
    await start();
    const { orderId, ids } = await placeOrder(2);
    now = T0 + HOUR;
    await moveTo(ids[1]!, 93, 500);
    const stock = await service.stock(WALDEN);
    const events = await count('SELECT COUNT(*) FROM order_events WHERE order_id = ?', orderId);
    const before = Date.now();
    // No offset: UTC, as search dates are read. T0 + 96 h + 1 ms.
    const run = await admin(['reconcile', '--now', '2026-03-06T09:00:00.001']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toEqual({ ...NOTHING, unshipped: 1, extraShippingTimedOut: 1 });
    const ctx = {
      store: () => Promise.resolve(service.deps.store),
      config: service.config,
      out: { note: () => undefined },
    };
    expect(await reconcile.run(['--now', '2026-03-06T10:00:00Z'], ctx)).toEqual(NOTHING);
    const after = Date.now();
    expect(await statuses(orderId)).toEqual([14, 90]);
    expect(await service.stock(WALDEN)).toBe(stock + 2);
    await expectBalanced(orderId);
    // --now measured the deadlines; the moves and their events carry the time they were made, not the pretend one.
    now = T0 + 97 * HOUR;
    const moved = await updatedSince(T0 + 50 * HOUR);
    expect(moved.map(([id, status]: unknown[]) => [id, status])).toEqual([
      [ids[0], 14],
      [ids[1], 90],
    ]);
    for (const [, , date] of moved) expect(Date.parse(date)).toBeGreaterThanOrEqual(before);
    for (const [, , date] of moved) expect(Date.parse(date)).toBeLessThanOrEqual(after);
    const stamps = await service.probe.all<{ created_at: number | string }>(
      'SELECT created_at FROM order_events WHERE order_id = ? ORDER BY sequence',
      orderId,
    );
    expect(stamps.length).toBeGreaterThan(Number(events));
    for (const { created_at } of stamps.slice(Number(events)))
      expect(Number(created_at)).toBeGreaterThanOrEqual(before);
    await expect(reconcile.run(['--now', 'yesterday'], ctx)).rejects.toMatchObject({
      exitCode: 2,
      message: "--now must be an ISO 8601 time, got 'yesterday'",
    });
  });
});

const count = (sql: string, ...params: unknown[]) => service.probe.scalar(sql, ...params);

/** Polls the store every 100 ms until `check` holds; fails naming `what` after `timeoutMs`. */
describe('the reconciliation lock', () => {
  it('lets one holder in at a time, makes a waiter wait, and tells a holder whose lease was taken', async () => {
    await start();
    const [a, b] = [new Redis(service.env.REDIS_URL), new Redis(service.env.REDIS_URL)];
    const key = `${service.config.REDIS_PREFIX}:test-lock`;
    let inside = 0;
    let most = 0;
    const hold = async () => {
      most = Math.max(most, ++inside);
      await sleep(150);
      inside -= 1;
      return 'done';
    };
    try {
      const once = await Promise.all([
        withLock(a, key, { ttlMs: 5000 }, hold),
        withLock(b, key, { ttlMs: 5000 }, hold),
      ]);
      expect(once.filter((r) => r.acquired)).toHaveLength(1);
      // The first holder is inside before the waiter asks, so the waiter's wait is what is tested.
      const first = withLock(a, key, { ttlMs: 5000 }, hold);
      while (!(await b.exists(key))) await sleep(5);
      const waiting = await Promise.all([first, withLock(b, key, { ttlMs: 5000, waitMs: 3000 }, hold)]);
      expect(waiting).toEqual([
        { acquired: true, value: 'done' },
        { acquired: true, value: 'done' },
      ]);
      expect(most).toBe(1);
      const taken = await withLock(a, key, { ttlMs: 300 }, async (lost) => {
        await b.set(key, 'another holder'); // as if the lease had expired and another process took it
        await sleep(250);
        return lost.aborted;
      });
      expect(taken).toEqual({ acquired: true, value: true });
      expect(await b.get(key)).toBe('another holder');
    } finally {
      a.disconnect();
      b.disconnect();
    }
  });
});

describe('two clock processes', () => {
  it('when two clocks tick every second over stale items, then each item is moved exactly once and passes never overlap', async () => {
    // Orders placed by a clock 100 h behind: their items are past the 96 h ship deadline as soon as they are bought.
    await start({}, Date.now() - 100 * HOUR);
    const env = { RECONCILE_CRON: '* * * * * *' };
    const clocks = await Promise.all([1, 2].map(() => service.spawn('jobs/clock.ts', env, 'clock ready')));
    const logs = clocks.map(logLines);
    const stock = await service.stock(WALDEN);
    const orders = [];
    for (let i = 0; i < 6; i += 1) orders.push((await placeOrder(2)).orderId);
    await until(
      async () => (await count('SELECT count(*) FROM order_items WHERE status = 14')) === 12,
      20_000,
      'twelve items unshipped',
    );
    await sleep(2500); // more ticks, which must find nothing left
    expect(await Promise.all(clocks.map((c) => stopChild(c)))).toEqual([0, 0]);

    const passes = logs
      .flat()
      .filter((l) => l.msg === 'reconcile pass done') as unknown as (ReconcileCounts & {
      startedAt: number;
      finishedAt: number;
    })[];
    expect(passes.reduce((n, p) => n + p.unshipped, 0)).toBe(12);
    expect(logs.every((l) => l.some((line) => line.msg.startsWith('reconcile pass')))).toBe(true);
    const byStart = [...passes].sort((x, y) => x.startedAt - y.startedAt);
    for (let i = 1; i < byStart.length; i += 1)
      expect(byStart[i]!.startedAt).toBeGreaterThanOrEqual(byStart[i - 1]!.finishedAt);
    expect(await count(`SELECT count(*) FROM ledger_entries WHERE kind = 'void'`)).toBe(12);
    expect(await count(`SELECT count(DISTINCT order_item_id) FROM ledger_entries WHERE kind = 'void'`)).toBe(
      12,
    );
    // Twelve copies taken when bought, each given back once when unshipped.
    expect(await service.stock(WALDEN)).toBe(stock);
    for (const orderId of orders) await expectBalanced(orderId);
    // Both clocks tick on the same second boundary, so the lock turns one of them away.
    expect(logs.flat().filter((l) => l.msg.includes('another pass holds the lock')).length).toBeGreaterThan(
      0,
    );
  }, 60_000);
});

describe('when Redis loses the queued jobs', () => {
  it('then reconciliation enqueues every stale order again and a worker completes each, charging it once', async () => {
    redis = await startPrivateRedis();
    await start({ REDIS_URL: redis.url }, Date.now());
    const stock = await service.stock(WALDEN);
    const orders = [];
    for (let i = 0; i < 10; i += 1) orders.push((await placeOrder(2, true)).orderId);
    expect(await service.deps.queue.queue.getWaitingCount()).toBe(10);
    const admin = new Redis(redis.url);
    await admin.flushall();
    admin.disconnect();
    expect(await service.deps.queue.queue.getWaitingCount()).toBe(0);
    await service.startWorker();

    expect(await pass(now + 121_000)).toEqual({ ...NOTHING, requeued: 10 });
    await until(
      async () => (await count(`SELECT count(*) FROM orders WHERE phase = 'settled'`)) === 10,
      30_000,
      'orders settled',
    );
    expect(await count('SELECT count(*) FROM order_items WHERE status = 5')).toBe(20);
    expect(await service.stock(WALDEN)).toBe(stock - 20);
    for (const orderId of orders) {
      await expectBalanced(orderId);
      expect(
        await count(`SELECT count(*) FROM ledger_entries WHERE order_id = ? AND kind = 'authorize'`, orderId),
      ).toBe(1);
    }
    expect(await pass(now + 60_000)).toEqual(NOTHING);
  });
});
