// SQLite and its disk: an answered order was flushed to the disk (it survives a power cut, not only the process):
// every answer waits for an fdatasync of the log begun after what it wrote or read was committed,
// and a full disk is "unavailable" (503 / 5030, Retry-After; the worker waits without using up an attempt).
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSealer } from '../../src/domain/secrets.js';
import { addCard, createClient } from '../../src/services/client-keys.js';
import type { Store } from '../../src/store/port/store.port.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite.store.js';
import { nodeWalFs, type WalFs } from '../../src/store/sqlite/wal-flusher.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { T0, newOrder } from '../helpers/store-contract.js';
import { TEST_STORE } from '../helpers/test-store.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';
import { logLines } from '../helpers/wait.js';

describe.runIf(TEST_STORE === 'sqlite')('SQLite durability', () => {
  let service: TestService;
  let buyer: Credentials;

  beforeAll(async () => {
    service = await createTestService();
    await service.importCatalog(VENDORS, LISTINGS);
    buyer = await service.client('durable buyer');
  });
  afterAll(() => service?.close());

  it('answers 2010 from a store whose every answer waits for a flush of the log (synchronous = NORMAL, WAL)', async () => {
    const res = await signed(service.app, buyer, 'POST', '/v1/orders', orderBody(buyer.ccToken), {
      headers: { Prefer: 'respond-async' },
    });
    expect(res.headers['svc-status']).toBe('2010');
    // NORMAL writes the log at each commit; the store flushes it (fdatasync, off the event loop) before answering.
    expect(await service.deps.store.settings()).toEqual({
      journal_mode: 'wal',
      synchronous: 'normal',
      wal_flush: 'before-answer',
    });
  });
});

describe.runIf(TEST_STORE === 'sqlite')('SQLite flushes before it answers', () => {
  let dir: string;
  let store: Store;
  let other: Database.Database;
  // fdatasyncs of the log started, and the gate they wait behind while the test holds it closed.
  let syncs = 0;
  let gate: Promise<void> = Promise.resolve();
  let openGate = () => {};
  const closeGate = () => {
    gate = new Promise((resolve) => (openGate = resolve));
  };
  const walFs: WalFs = {
    ...nodeWalFs,
    async fdatasync(fd) {
      syncs += 1;
      await gate;
      await nodeWalFs.fdatasync(fd);
    },
  };
  const settled = <T>(promise: Promise<T>) => {
    const state = { done: false };
    void promise.then(() => (state.done = true));
    return state;
  };
  const turns = () => new Promise((resolve) => setTimeout(resolve, 20));
  /** `pending` stays unsettled behind the one fdatasync begun since `before` (held at the gate), then resolves. */
  const heldBehindOneFlush = async (pending: Promise<unknown>, before: number) => {
    const state = settled(pending);
    await turns();
    expect(state.done).toBe(false);
    expect(syncs).toBe(before + 1);
    openGate();
    await pending;
  };

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-flush-'));
    const dbPath = path.join(dir, 'orders.db');
    store = await openSqliteStore(dbPath, { sealer: createSealer(crypto.randomBytes(32)), walFs });
    other = new Database(dbPath);
  });
  afterAll(async () => {
    openGate();
    other?.close();
    await store?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('resolves a write only once an fdatasync of the log that began after its commit has returned', async () => {
    closeGate();
    const before = syncs;
    const imported = store.catalog.importCatalog(VENDORS, LISTINGS);
    const state = settled(imported);
    await turns();
    // Committed (another connection reads it) but not answered: the flush has not returned.
    expect(other.prepare('SELECT count(*) FROM listings').pluck().get()).toBe(LISTINGS.length);
    expect(state.done).toBe(false);
    expect(syncs).toBe(before + 1);
    openGate();
    await imported;
  });

  it('resolves an acceptance once committed, and orders.durable() once a flush begun after it has returned', async () => {
    const { clientId } = await createClient(store.clients, 'flushed buyer', T0);
    const { cardId } = await addCard(store.clients, clientId, false, T0);
    const listingId = LISTINGS[0]!.listingId;
    closeGate();
    const before = syncs;
    const accepted = await store.orders.accept(newOrder([{ listingId, copies: 1 }], { clientId, cardId }));
    if (accepted.kind !== 'created') throw new Error(`expected a new order, got ${accepted.kind}`);
    // Committed, so the worker can take its job, with no flush asked for yet.
    expect(
      other.prepare('SELECT count(*) FROM orders WHERE order_id = ?').pluck().get(accepted.orderId),
    ).toBe(1);
    expect(syncs).toBe(before);
    await heldBehindOneFlush(store.orders.durable(), before);
  });

  it("resolves an attempt's count once committed, and orders.durable() once a flush begun after it has returned", async () => {
    const { clientId } = await createClient(store.clients, 'attempted buyer', T0);
    const { cardId } = await addCard(store.clients, clientId, false, T0);
    const listingId = LISTINGS[0]!.listingId;
    const accepted = await store.orders.accept(newOrder([{ listingId, copies: 1 }], { clientId, cardId }));
    if (accepted.kind !== 'created') throw new Error(`expected a new order, got ${accepted.kind}`);
    await store.orders.durable();
    closeGate();
    const before = syncs;
    const begun = await store.processing.beginAttempt(accepted.orderId, {
      leaseUntil: T0 + 30_000,
      maxAttempts: 5,
    });
    expect(begun?.order.attempts).toBe(1);
    // Committed (another connection reads the count), with no flush asked for yet.
    expect(
      other.prepare('SELECT attempts FROM orders WHERE order_id = ?').pluck().get(accepted.orderId),
    ).toBe(1);
    expect(syncs).toBe(before);
    await heldBehindOneFlush(store.orders.durable(), before);
  });

  it("flushes before answering a read of another process's commit, and not again when nothing was committed", async () => {
    other.prepare('UPDATE listings SET stock = stock + 1 WHERE listing_id = ?').run(LISTINGS[0]!.listingId);
    closeGate();
    const before = syncs;
    await heldBehindOneFlush(store.catalog.loadForPricing([LISTINGS[0]!.listingId]), before);
    await store.catalog.loadForPricing([LISTINGS[0]!.listingId]);
    expect(syncs).toBe(before + 1);
  });
});

// A small file system of its own (tmpfs, which needs root) that the test fills.
const AS_ROOT = process.getuid?.() === 0;

describe.runIf(TEST_STORE === 'sqlite' && AS_ROOT)('SQLite on a full file system', () => {
  let mount: string;
  let mounted = false;
  let service: TestService;
  let buyer: Credentials;
  const filler = () => path.join(mount, 'filler');

  beforeAll(async () => {
    mount = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64m,mode=0700', 'tmpfs', mount]);
    mounted = true;
    // One attempt per job: an attempt used up by the full disk would fail the order.
    service = await createTestService({
      env: { DB_PATH: path.join(mount, 'orders.db'), MAX_PROCESS_ATTEMPTS: '1' },
    });
    await service.importCatalog(VENDORS, LISTINGS);
    buyer = await service.client('buyer on a full disk');
  });
  afterAll(async () => {
    try {
      if (mounted) fs.rmSync(filler(), { force: true });
      await service?.close();
    } finally {
      // Unmounted whatever the test left, a failed close included.
      if (mounted) execFileSync('umount', ['--lazy', mount]);
      fs.rmSync(mount, { recursive: true, force: true });
    }
  });

  /** Writes a file until the file system refuses (ENOSPC): nothing is left for SQLite. */
  function fillDisk() {
    const fd = fs.openSync(filler(), 'w');
    const chunk = Buffer.alloc(256 * 1024, 1);
    try {
      for (;;) fs.writeSync(fd, chunk);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
    }
    // The last bytes a smaller write still fits.
    try {
      for (;;) fs.writeSync(fd, chunk.subarray(0, 512));
    } catch {
      // ENOSPC
    } finally {
      fs.closeSync(fd);
    }
  }

  const post = (requestId: string) =>
    signed(service.app, buyer, 'POST', '/v1/orders', orderBody(buyer.ccToken), {
      requestId,
      headers: { Prefer: 'respond-async' },
    });
  const itemStatuses = async (orderId: number) =>
    (
      await service.probe.all<{ status: number }>(
        'SELECT status FROM order_items WHERE order_id = ? ORDER BY order_item_id',
        orderId,
      )
    ).map((row) => row.status);

  it('answers 503 / 5030 with Retry-After, and the worker waits without using up an attempt', async () => {
    // A process cannot open the store on a full disk: the worker starts while there is room, and is paused
    // (SIGSTOP) while an order is accepted and the disk fills, so that its job runs only on the full disk.
    const worker = await service.startWorker({ LOG_LEVEL: 'info' });
    const lines = logLines(worker);
    worker.kill('SIGSTOP');
    const accepted = await post(crypto.randomUUID());
    expect(accepted.headers['svc-status']).toBe('2010');
    const acceptedId = accepted.body.orderId as number;

    fillDisk();
    const refusedRequest = crypto.randomUUID();
    const refused = await post(refusedRequest);
    expect(refused.status).toBe(503);
    expect(refused.headers['svc-status']).toBe('5030');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // Reads need no room: the accepted order is still there for its client.
    const read = await signed(service.app, buyer, 'GET', `/v1/orders/${acceptedId}`);
    expect(read.status).toBe(200);

    // The worker's attempt cannot write: its job waits for the store, again and again, with its one attempt.
    worker.kill('SIGCONT');
    await expect
      .poll(() => lines.filter((line) => line.msg === 'store unavailable; job delayed').length, {
        timeout: 30_000,
      })
      .toBeGreaterThanOrEqual(2);
    expect(await itemStatuses(acceptedId)).toEqual([1]);

    // Room again: the waiting order is bought, and the refused request, sent again, is accepted and bought.
    fs.rmSync(filler());
    const again = await post(refusedRequest);
    expect(again.headers['svc-status']).toBe('2010');
    for (const orderId of [acceptedId, again.body.orderId as number])
      await expect.poll(() => itemStatuses(orderId), { timeout: 30_000 }).toEqual([5]);
  });
});
