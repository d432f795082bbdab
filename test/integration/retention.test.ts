// Retention (docs/api.md#operations): the clock's pass deletes order events and finished webhook
// deliveries older than EVENT_RETENTION_DAYS and expired search cursors, in small batches; never a pending
// delivery or its event, never anything inside the window, never an order, item, payment or ledger entry.
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRetentionPass, type RetentionCounts } from '../../src/services/retention.js';
import { addWebhook, replayWebhook } from '../../src/services/webhooks.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import {
  createTestService,
  signed,
  stopChild,
  type Credentials,
  type TestService,
} from '../helpers/test-service.js';
import { TEST_STORE } from '../helpers/test-store.js';

const DAY = 86_400_000;
const NOW = Date.now();
const OLD = NOW - 40 * DAY;

let service: TestService;
let buyer: Credentials;
let webhookId: number;
let orderIds: number[];
let sequence = 100;

const count = async (sql: string, ...params: unknown[]) => Number(await service.probe.scalar(sql, ...params));

/** An event of `orderId` made at `createdAt`, as the store records one; its event_no. */
async function event(orderId: number, createdAt: number, snapshot = '{}'): Promise<number> {
  const eventId = `evt_retention_${++sequence}`;
  return count(
    `INSERT INTO order_events (event_id, type, client_id, order_id, sequence, created_at, snapshot)
     VALUES (?, 'order.updated', ?, ?, ?, ?, ?) RETURNING event_no`,
    eventId,
    buyer.clientId,
    orderId,
    sequence,
    createdAt,
    snapshot,
  );
}

async function delivery(eventNo: number, state: string, createdAt: number, finishedAt: number | null) {
  await count(
    `INSERT INTO webhook_deliveries (event_no, webhook_id, state, next_attempt_at, created_at, finished_at)
     VALUES (?, ?, ?, 0, ?, ?) RETURNING delivery_id`,
    eventNo,
    webhookId,
    state,
    createdAt,
    finishedAt,
  );
}

const pass = (batchSize: number) =>
  runRetentionPass(service.deps, { batchSize, pauseMs: 0 }).then((result) => {
    if (!result.ran) throw new Error(`retention did not run: ${result.reason}`);
    return result.counts;
  });

const kept = async () => ({
  orders: await count('SELECT count(*) FROM orders'),
  items: await count('SELECT count(*) FROM order_items'),
  ledger: await count('SELECT count(*) FROM ledger_entries'),
  payments: await count('SELECT count(*) FROM payments'),
});

beforeAll(async () => {
  service = await createTestService({ env: { EVENT_RETENTION_DAYS: '30' } });
  await service.importCatalog(VENDORS, LISTINGS);
  buyer = await service.client('retention buyer');
  orderIds = [];
  for (let i = 0; i < 3; i++) {
    const res = await signed(service.app, buyer, 'POST', '/v1/orders', orderBody(buyer.ccToken), {
      headers: { Prefer: 'respond-async' },
    });
    expect(res.status).toBe(200);
    orderIds.push(res.body.orderId as number);
  }
  const deps = { store: service.deps.store, allowPrivate: true, clock: Date.now };
  const added = await addWebhook(deps, buyer.clientId, 'http://127.0.0.1:9/hook');
  if (added.kind !== 'added') throw new Error(added.message);
  webhookId = added.webhook.webhookId;
});
afterAll(() => service.close());

describe('a retention pass', () => {
  let counts: RetentionCounts;
  const events: Record<string, number> = {};
  let before: Awaited<ReturnType<typeof kept>>;

  beforeAll(async () => {
    const [a, b, c] = orderIds as [number, number, number];
    // Older than the window: delivered long ago (goes), still pending (stays), finished yesterday (stays),
    // never delivered anywhere (goes); five more with no delivery, to be taken in batches of two.
    events.delivered = await event(a, OLD);
    await delivery(events.delivered, 'delivered', OLD, OLD + 1000);
    events.pending = await event(a, OLD);
    await delivery(events.pending, 'pending', OLD, null);
    events.recentlyFinished = await event(b, OLD);
    await delivery(events.recentlyFinished, 'failed', NOW - DAY, NOW - DAY);
    for (let i = 0; i < 5; i++) events[`bare${i}`] = await event(b, OLD - i * DAY);
    // Inside the window: stays, delivered or not.
    events.recent = await event(c, NOW - 29 * DAY);
    await delivery(events.recent, 'delivered', NOW - 29 * DAY, NOW - 29 * DAY);
    events.today = await event(c, NOW);
    // Search cursors: a day is their life.
    for (const [id, at] of [
      [1001, NOW - 2 * DAY],
      [1002, NOW - 25 * 3_600_000],
      [1003, NOW - 60_000],
    ])
      await count(
        `INSERT INTO search_cursors (cursor_id, client_id, criteria_hash, date_start, date_end, after_created_at,
           after_order_id, created_at) VALUES (?, ?, 'x', 0, 1, 0, 0, ?) RETURNING cursor_id`,
        id,
        buyer.clientId,
        at,
      );
    before = await kept();
    counts = await pass(2);
  });

  const exists = async (name: string) =>
    (await count('SELECT count(*) FROM order_events WHERE event_no = ?', events[name])) === 1;

  it('when events and finished deliveries are older than EVENT_RETENTION_DAYS, then they are deleted, in batches', async () => {
    expect(counts).toMatchObject({ deliveries: 1, events: 6, cursors: 2 });
    // Batches of two: 1 delivery (one batch), 6 events (three full batches and an empty one), 2 cursors (two).
    expect(counts.batches).toBeGreaterThanOrEqual(7);
    expect(await exists('delivered')).toBe(false);
    for (let i = 0; i < 5; i++) expect(await exists(`bare${i}`)).toBe(false);
    expect(await count('SELECT count(*) FROM search_cursors')).toBe(1);
  });

  it('then what is still to be delivered, what finished inside the window and every event inside it stay', async () => {
    for (const name of ['pending', 'recentlyFinished', 'recent', 'today'])
      expect(await exists(name)).toBe(true);
    expect(await count("SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'")).toBe(1);
    expect(await count('SELECT count(*) FROM webhook_deliveries')).toBe(3);
    // webhook:replay reaches back as far as the window: both events inside it are sent again.
    const replayed = await replayWebhook(
      { store: service.deps.store, clock: Date.now },
      webhookId,
      NOW - 30 * DAY,
    );
    expect(replayed).toEqual({ kind: 'replayed', count: 2 });
  });

  it('then orders, items, payments and the ledger are as they were, and a second pass deletes nothing', async () => {
    expect(await kept()).toEqual(before);
    expect(before.orders).toBe(3);
    const again = await pass(2);
    expect(again).toMatchObject({ deliveries: 0, events: 0, cursors: 0 });
  });

  it('when a pass holds the lock, then another one does not run beside it', async () => {
    const [first, second] = await Promise.all([
      runRetentionPass(service.deps, { pauseMs: 0 }),
      runRetentionPass(service.deps, { pauseMs: 0 }),
    ]);
    expect([first.ran, second.ran].sort()).toEqual([false, true]);
  });
});

describe.runIf(TEST_STORE === 'sqlite')('the SQLite file', () => {
  const pragma = (name: string) => {
    const db = new Database(service.config.DB_PATH, { readonly: true });
    try {
      return db.pragma(name, { simple: true });
    } finally {
      db.close();
    }
  };

  it('when a store is new, then it keeps free pages apart (auto_vacuum = INCREMENTAL)', () => {
    expect(pragma('auto_vacuum')).toBe(2);
  });

  it('when a pass deletes many events, then their pages go back to the file system', async () => {
    const large = JSON.stringify({ padding: 'x'.repeat(4000) });
    for (let i = 0; i < 300; i++) await event(orderIds[0]!, OLD, large);
    const db = new Database(service.config.DB_PATH);
    db.pragma('wal_checkpoint(TRUNCATE)');
    const pagesBefore = Number(db.pragma('page_count', { simple: true }));
    const counts = await pass(100);
    expect(counts.events).toBe(300);
    expect(counts.pagesReclaimed).toBeGreaterThan(250);
    db.pragma('wal_checkpoint(TRUNCATE)');
    expect(Number(db.pragma('page_count', { simple: true }))).toBeLessThan(pagesBefore - 250);
    expect(db.pragma('freelist_count', { simple: true })).toBe(0);
    db.close();
  });

  it('when a file made before retention (auto_vacuum NONE) is opened, then it is converted once', async () => {
    const db = new Database(service.config.DB_PATH);
    db.pragma('auto_vacuum = NONE');
    db.exec('VACUUM');
    db.close();
    expect(pragma('auto_vacuum')).toBe(0);
    await service.deps.store.migrate();
    expect(pragma('auto_vacuum')).toBe(2);
    expect(await count('SELECT count(*) FROM orders')).toBe(3);
  });
});

describe('the clock', () => {
  it('when RETENTION_CRON ticks, then the clock process deletes what is past the window', async () => {
    const old = await event(orderIds[2]!, OLD);
    const recent = await event(orderIds[2]!, NOW);
    const clock = await service.spawn('jobs/clock.ts', { RETENTION_CRON: '* * * * * *' }, 'clock ready');
    const left = (eventNo: number) => count('SELECT count(*) FROM order_events WHERE event_no = ?', eventNo);
    await expect.poll(() => left(old)).toBe(0);
    expect(await left(recent)).toBe(1);
    await stopChild(clock);
  });
});
