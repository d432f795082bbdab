// SQLite and its disk: an answered order was flushed to the disk (it survives a power cut, not only the process).
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { TEST_STORE } from '../helpers/test-store.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';

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
      requestId: crypto.randomUUID(),
      headers: { Prefer: 'respond-async' },
    });
    expect(res.headers['svc-status']).toBe('2010');

    // FULL: the write-ahead log is flushed at each commit; NORMAL only at checkpoints.
    expect(await service.deps.store.settings()).toEqual({ journal_mode: 'wal', synchronous: 'full' });
  });
});
