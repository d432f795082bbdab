// When another process (a worker, an operator's import) holds the store's write lock, the web process keeps
// answering: an order waits for the lock without holding up anyone else; on SQLite at most
// WEB_DB_BUSY_TIMEOUT_MS, after which it is refused with 503 5030 and Retry-After, and the same request succeeds
// once the lock is gone.
import crypto from 'node:crypto';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/redis.js';
import { createSigningClient, type SigningClient } from '../helpers/signed-client.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, type Credentials, type TestService } from '../helpers/test-service.js';
import { TEST_STORE } from '../helpers/test-store.js';

let service: TestService;
let buyer: Credentials;
let client: SigningClient;
let baseUrl: string;
let patientUrl: string;

beforeAll(async () => {
  service = await createTestService();
  await service.importCatalog(VENDORS, LISTINGS);
  buyer = await service.client('patient buyer');
  const port = await freePort();
  await service.spawn(
    'src/server.ts',
    { PORT: String(port), WEB_DB_BUSY_TIMEOUT_MS: '100' },
    'web listening',
  );
  baseUrl = `http://127.0.0.1:${port}`;
  client = createSigningClient({ baseUrl, ...buyer });
  // A second web process with the default wait (2 s).
  const patientPort = await freePort();
  await service.spawn('src/server.ts', { PORT: String(patientPort) }, 'web listening');
  patientUrl = `http://127.0.0.1:${patientPort}`;
});
afterAll(() => service.close());

/** Takes the write lock from another connection, as a worker's transaction does; resolves to its release. */
async function holdWriteLock(): Promise<() => Promise<void>> {
  if (TEST_STORE === 'sqlite') {
    const db = new Database(service.config.DB_PATH);
    db.exec('BEGIN IMMEDIATE');
    return async () => {
      db.exec('ROLLBACK');
      db.close();
    };
  }
  const other = new pg.Client({ connectionString: service.config.DATABASE_URL });
  await other.connect();
  await other.query('BEGIN');
  await other.query('LOCK TABLE orders IN SHARE ROW EXCLUSIVE MODE');
  return async () => {
    await other.query('ROLLBACK');
    await other.end();
  };
}

/** /healthz every 50 ms for `ms`: how long each took. */
async function healthChecks(url: string, ms: number): Promise<{ value: Response; ms: number }[]> {
  const checks: Promise<{ value: Response; ms: number }>[] = [];
  for (let i = 0; i < ms / 50; i++) {
    checks.push(timed(fetch(`${url}/healthz`)));
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return Promise.all(checks);
}

async function timed<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work;
  return { value, ms: performance.now() - started };
}

describe(`when another process holds the write lock of the ${TEST_STORE} store`, () => {
  it('then the web keeps answering, and the order goes through once the lock is released', async () => {
    const requestId = crypto.randomUUID();
    const order = () =>
      client.request('POST', '/v1/orders', orderBody(buyer.ccToken), {
        requestId,
        headers: { prefer: 'respond-async' },
      });
    const release = await holdWriteLock();
    let released = false;
    try {
      const placing = timed(order());
      // Health checks while the order is in the web: none may wait on the order's lock wait.
      const health = await healthChecks(baseUrl, 1000);
      expect(health.map((check) => check.value.status)).toEqual(health.map(() => 200));
      // Without a bound the web would sit in SQLite's busy handler for 10 s, every other request with it.
      expect(Math.max(...health.map((check) => check.ms))).toBeLessThan(1000);
      if (TEST_STORE === 'sqlite') {
        const refused = await placing;
        expect(refused.value.status).toBe(503);
        expect(refused.value.svcStatus).toEqual([5030]);
        expect(refused.value.headers['retry-after']).toBe('1');
        expect(refused.ms).toBeLessThan(2000);
      }
      released = true;
      await release();
      const accepted = TEST_STORE === 'sqlite' ? await order() : (await placing).value;
      expect(accepted.status).toBe(200);
      expect(accepted.svcStatus).toEqual([2010]);
    } finally {
      if (!released) await release();
    }
  });

  it('then an order waits for a lock held shorter than its wait, and the web answers others meanwhile', async () => {
    const patient = createSigningClient({ baseUrl: patientUrl, ...buyer });
    const release = await holdWriteLock();
    let released = false;
    try {
      const placing = patient.request('POST', '/v1/orders', orderBody(buyer.ccToken), {
        headers: { prefer: 'respond-async' },
      });
      // Were the wait SQLite's busy handler, every check would stall until the lock is released, 1.5 s on.
      const health = await healthChecks(patientUrl, 1500);
      expect(health.map((check) => check.value.status)).toEqual(health.map(() => 200));
      expect(Math.max(...health.map((check) => check.ms))).toBeLessThan(1000);
      released = true;
      await release();
      const accepted = await placing;
      expect(accepted.status).toBe(200);
      expect(accepted.svcStatus).toEqual([2010]);
    } finally {
      if (!released) await release();
    }
  });
});
