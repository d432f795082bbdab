// SQLite and its disk: an answered order was flushed to the disk (it survives a power cut, not only the process),
// and a full disk is "unavailable" (503 / 5030, Retry-After; the worker waits without using up an attempt).
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
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

  it('answers 2010 from a connection that flushes every commit (synchronous = FULL, WAL)', async () => {
    const res = await signed(service.app, buyer, 'POST', '/v1/orders', orderBody(buyer.ccToken), {
      headers: { Prefer: 'respond-async' },
    });
    expect(res.headers['svc-status']).toBe('2010');
    // FULL: the write-ahead log is flushed at each commit; NORMAL only at checkpoints.
    expect(await service.deps.store.settings()).toEqual({ journal_mode: 'wal', synchronous: 'full' });
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
