import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, StoreTimeoutError } from '../../src/store/postgres/postgres.pool.js';
import { isStoreUnavailable } from '../../src/store/store-errors.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';
import { whileLocked } from '../helpers/table-lock.js';
import { THROUGH_PGBOUNCER } from '../helpers/test-store.js';

// DATABASE_TIMEOUT_MS: a statement the database does not answer in time (a lock held elsewhere, a pooler holding
// queries while its server is away, a host that stopped answering) fails as the store being unavailable, and the
// web answers 503 5030 instead of keeping the caller (and a pooled connection) waiting.
const TIMEOUT_MS = 500;
let service: TestService;
let creds: Credentials;

beforeAll(async () => {
  service = await createTestService({ env: { DATABASE_TIMEOUT_MS: String(TIMEOUT_MS) } });
  creds = await service.client();
});
afterAll(() => service?.close());

/** The service's database (this file runs on the PostgreSQL projects only). */
const databaseUrl = () => (service.env as Record<string, string>).DATABASE_URL!;
const pooling = THROUGH_PGBOUNCER ? ('transaction' as const) : ('direct' as const);

describe('a database that does not answer in time (PostgreSQL)', () => {
  it('a request waiting on it is answered 503 5030 with Retry-After, and served once it answers', async () => {
    const search = () => signed(service.app, creds, 'GET', '/v1/orders?limit=5');
    const refused = await whileLocked(databaseUrl(), 'orders', search);
    expect(refused.status).toBe(503);
    expect(refused.headers['svc-status']).toBe('5030');
    expect(refused.headers['retry-after']).toBe('1');
    const served = await search();
    expect(served.status).toBe(200);
  });

  it('a statement past the timeout fails as unavailable, and the pool serves the next one', async () => {
    const pool = createPool(databaseUrl(), { poolSize: 1, pooling, timeoutMs: TIMEOUT_MS });
    try {
      const err: unknown = await pool.query('SELECT pg_sleep(30)').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreTimeoutError);
      expect(isStoreUnavailable(err)).toBe(true);
      expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }
  }, 20_000);

  it('a connection the other end accepts but never answers fails as unavailable', async () => {
    const silent = net.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as net.AddressInfo;
    const pool = createPool(`postgres://nobody@127.0.0.1:${port}/nothing`, { timeoutMs: TIMEOUT_MS });
    try {
      const err: unknown = await pool.query('SELECT 1').catch((e: unknown) => e);
      expect(isStoreUnavailable(err)).toBe(true);
    } finally {
      await pool.end();
      silent.close();
    }
  }, 20_000);
});
