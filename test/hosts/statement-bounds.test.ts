import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, StoreTimeoutError } from '../../src/store/postgres/postgres.pool.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';
import { whileLocked } from '../helpers/table-lock.js';
import { THROUGH_PGBOUNCER } from '../helpers/test-store.js';

// Issue 41: a search the service gave up on (503/5030 after DATABASE_TIMEOUT_MS) went on running in the server,
// its socket closed but its statement never cancelled. Now the service sends a cancel request for a statement it
// gives up on, and straight to the server every connection also carries statement_timeout = DATABASE_TIMEOUT_MS.
const TIMEOUT_MS = 500;
let service: TestService;
let creds: Credentials;

beforeAll(async () => {
  service = await createTestService({ env: { DATABASE_TIMEOUT_MS: String(TIMEOUT_MS) } });
  creds = await service.client();
});
afterAll(() => service?.close());

const databaseUrl = () => (service.env as Record<string, string>).DATABASE_URL!;

/** Statements running in the service's database now, but the probe's own and `except`'s. */
async function running(except: number[] = []): Promise<string[]> {
  const rows = await service.probe.all<{ query: string }>(
    `SELECT query FROM pg_stat_activity
      WHERE datname = current_database() AND state = 'active' AND backend_type = 'client backend'
        AND pid <> pg_backend_pid() AND NOT (pid = ANY($1::int[]))`,
    except,
  );
  return rows.map((r) => r.query);
}

describe('a statement the service gives up on (PostgreSQL)', () => {
  it('a search answered 503 5030 leaves no statement of the service running in the server', async () => {
    await whileLocked(databaseUrl(), 'orders', async (holderPid) => {
      const refused = await signed(service.app, creds, 'GET', '/v1/orders?limit=5');
      expect(refused.status).toBe(503);
      expect(refused.headers['svc-status']).toBe('5030');
      // The lock is still held: a statement left running would still be waiting on it.
      await expect.poll(() => running([holderPid]), { timeout: 5000, interval: 100 }).toEqual([]);
    });
    expect((await signed(service.app, creds, 'GET', '/v1/orders?limit=5')).status).toBe(200);
  }, 30_000);

  it('is cancelled in the server by a cancel request, with no statement_timeout (as through a pooler)', async () => {
    // 'session' sends no startup option, so only the cancel request can end it; through PgBouncer, 'transaction'.
    const pool = createPool(databaseUrl(), {
      poolSize: 1,
      pooling: THROUGH_PGBOUNCER ? 'transaction' : 'session',
      timeoutMs: TIMEOUT_MS,
    });
    try {
      expect((await pool.query('SHOW statement_timeout')).rows).toEqual([{ statement_timeout: '0' }]);
      const began = Date.now();
      const err: unknown = await pool
        .query("SELECT pg_sleep(60), 'given up on' AS marker")
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreTimeoutError);
      // Within the wait and the cancel's own bound (1 s), with room for a busy machine.
      expect(Date.now() - began).toBeLessThan(10_000);
      await expect
        .poll(async () => (await running()).filter((q) => q.includes('given up on')), {
          timeout: 5000,
          interval: 100,
        })
        .toEqual([]);
      expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }
  }, 30_000);

  it.skipIf(THROUGH_PGBOUNCER)(
    'straight to the server, a connection ends a statement by itself after the same time',
    async () => {
      const pool = createPool(databaseUrl(), { poolSize: 1, pooling: 'direct', timeoutMs: TIMEOUT_MS });
      const untimed = createPool(databaseUrl(), { poolSize: 1, pooling: 'direct', timeoutMs: 0 });
      try {
        expect((await pool.query('SHOW statement_timeout')).rows).toEqual([
          { statement_timeout: `${TIMEOUT_MS}ms` },
        ]);
        // Migrations and the admin CLI (timeoutMs 0) take as long as they need.
        expect((await untimed.query('SHOW statement_timeout')).rows).toEqual([{ statement_timeout: '0' }]);
      } finally {
        await Promise.all([pool.end(), untimed.end()]);
      }
    },
  );
});
