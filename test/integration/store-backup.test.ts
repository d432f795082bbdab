// A backup taken while a client orders, restored into an empty place, and the service started on it: every order
// answered 2010 before the backup began is there with its items, ledger and payments, as docs/operating.md
// (Backups and restore) says. SQLite: `admin store:backup`; PostgreSQL: pg_dump and pg_restore, the server's tools.
import { execFile, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDatabase, dropDatabase, requirePostgresBinDir } from '../../scripts/postgres.js';
import { freePort } from '../../scripts/redis.js';
import { secretsKeyFile } from '../../src/store/secrets/secrets-key.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createSigningClient } from '../helpers/signed-client.js';
import { openProbe, TEST_STORE } from '../helpers/test-store.js';
import {
  createTestService,
  signed,
  spawnProcess,
  stopChild,
  type Credentials,
  type TestService,
} from '../helpers/test-service.js';
import type { Probe } from '../helpers/store.probe.js';
import { runAdmin } from '../helpers/wait.js';

const run = promisify(execFile);
const WALDEN = 2002;
const LOADERS = 3;

let service: TestService;
let buyer: Credentials;
const children = new Set<ChildProcess>();
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  service = await createTestService();
  await service.importCatalog(
    VENDORS,
    LISTINGS.map((l) => (l.listingId === WALDEN ? { ...l, stock: 100_000 } : l)),
  );
  buyer = await service.client('backed-up buyer');
  await service.startWorker();
}, 60_000);
afterAll(async () => {
  await Promise.all([...children].map((child) => stopChild(child)));
  for (const cleanup of cleanups) await cleanup();
  await service?.close();
});

const storeEnv = (): Record<string, string | undefined> => service.env;

/** Orders sent back to back by a few callers until `stop`; each answered 2010 is noted with when it was answered. */
function orderLoad() {
  const answered: { orderId: number; at: number }[] = [];
  let stopping = false;
  const loops = Array.from({ length: LOADERS }, async () => {
    while (!stopping) {
      const body = orderBody(buyer.ccToken, {
        listings: [{ listingId: WALDEN, quantity: 1 + (answered.length % 3) }],
      });
      const res = await signed(service.app, buyer, 'POST', '/v1/orders', body);
      if (String(res.headers['svc-status']) === '2010')
        answered.push({ orderId: res.body.orderId, at: Date.now() });
    }
  });
  return {
    answered,
    async stop() {
      stopping = true;
      await Promise.all(loops);
    },
  };
}

/** The rows of an order that must survive a restore as they were: its items, its ledger, its payment. */
async function storedOrders(probe: Probe, orderIds: number[]) {
  const ids = orderIds.join(',');
  return {
    items: await probe.all(
      `SELECT order_item_id, order_id, listing_id, status FROM order_items WHERE order_id IN (${ids}) ORDER BY order_item_id`,
    ),
    ledger: await probe.all(
      `SELECT entry_key, order_id, kind, amount_cents, currency FROM ledger_entries WHERE order_id IN (${ids}) ORDER BY entry_key`,
    ),
    payments: await probe.all(
      `SELECT idempotency_key, amount_cents, status FROM payments
        WHERE idempotency_key IN (${orderIds.map((id) => `'order-${id}'`).join(',')}) ORDER BY idempotency_key`,
    ),
  };
}

/** A web process on the restored store (with its own queue prefix), and a client of it. */
async function serviceOn(storeEnv: Record<string, string>) {
  const port = await freePort();
  await spawnProcess(
    children,
    'src/server.ts',
    {
      ...service.env,
      ...storeEnv,
      PORT: String(port),
      QUEUE_PREFIX: `r${crypto.randomBytes(4).toString('hex')}`,
    },
    'web listening',
  );
  return createSigningClient({
    baseUrl: `http://127.0.0.1:${port}`,
    accessKey: buyer.accessKey,
    secretKey: buyer.secretKey,
  });
}

/** Every order answered before the backup began, read from the restored service as its client sees it. */
async function expectRestored(restoredEnv: Record<string, string>, before: number[]) {
  const client = await serviceOn(restoredEnv);
  for (const orderId of before) {
    const [restored, live] = await Promise.all([
      client.getOrder(orderId),
      signed(service.app, buyer, 'GET', `/v1/orders/${orderId}`),
    ]);
    expect(restored.svcStatus).toEqual([2000]);
    expect(restored.body).toEqual(live.body);
  }
  const probe = openProbe(restoredEnv);
  try {
    expect(await storedOrders(probe, before)).toEqual(await storedOrders(service.probe, before));
  } finally {
    await probe.close();
  }
}

/** SQLite: `admin store:backup`, then the copy and its key in an empty folder. */
async function sqliteBackupRestored(): Promise<void> {
  const load = orderLoad();
  while (load.answered.length < 20) await new Promise((r) => setTimeout(r, 50));
  const began = Date.now();
  const before = load.answered.filter((a) => a.at < began).map((a) => a.orderId);
  const target = path.join(service.dir, 'backups', 'orders.db');
  const backup = await runAdmin(service.env, ['store:backup', '--to', target]);
  const duringBackup = load.answered.length;
  // Orders went on being answered while the copy was written.
  while (load.answered.length < duringBackup + 5) await new Promise((r) => setTimeout(r, 50));
  await load.stop();

  expect(backup.code).toBe(0);
  const copy = JSON.parse(backup.stdout) as { path: string; bytes: number; orders: number };
  expect(copy).toEqual({ path: target, bytes: fs.statSync(target).size, orders: expect.any(Number) });
  expect(copy.orders).toBeGreaterThanOrEqual(before.length);
  expect(fs.statSync(target).mode & 0o777).toBe(0o600);
  expect(fs.readdirSync(path.dirname(target))).toEqual(['orders.db']);
  expect(backup.stderr).toContain(`does not hold the secrets key (${secretsKeyFile(storeEnv().DB_PATH!)})`);

  // The restore: an empty folder, the copy as its store and the key beside it, the service started there.
  const restored = fs.mkdtempSync(path.join(service.dir, 'restored-'));
  fs.copyFileSync(target, path.join(restored, 'orders.db'));
  fs.copyFileSync(secretsKeyFile(storeEnv().DB_PATH!), path.join(restored, 'secrets.key'));
  await expectRestored({ DB_PATH: path.join(restored, 'orders.db') }, before);
}

/** PostgreSQL: store:backup names pg_dump; a pg_dump restored into a new database with pg_restore. */
async function postgresDumpRestored(): Promise<void> {
  const refused = await runAdmin(service.env, ['store:backup', '--to', path.join(service.dir, 'x.db')]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain('pg_dump');

  const bin = requirePostgresBinDir('pg_dump, pg_restore: the test setup installs them with the server');
  const load = orderLoad();
  while (load.answered.length < 20) await new Promise((r) => setTimeout(r, 50));
  const began = Date.now();
  const before = load.answered.filter((a) => a.at < began).map((a) => a.orderId);
  const dump = path.join(service.dir, 'orders.dump');
  await run(path.join(bin, 'pg_dump'), ['--format=custom', '--file', dump, storeEnv().DATABASE_URL!]);
  await load.stop();

  const name = `r_${crypto.randomBytes(6).toString('hex')}`;
  const serverUrl = inject('postgresUrl')!;
  const url = await createDatabase(serverUrl, name);
  cleanups.push(() => dropDatabase(serverUrl, name));
  await run(path.join(bin, 'pg_restore'), ['--no-owner', '--dbname', url, dump]);
  const restoredEnv = { DATABASE_URL: url, SECRETS_KEY: storeEnv().SECRETS_KEY! };
  await expectRestored(restoredEnv, before);

  // The role's settings in the new database, which pg_dump does not carry, were set again by the service's start.
  const probe = openProbe(restoredEnv);
  try {
    const settings = await probe.all<{ setting: string }>(
      `SELECT unnest(s.setconfig) AS setting FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase
          WHERE d.datname = current_database()`,
    );
    expect(settings.map((s) => s.setting)).toEqual(
      expect.arrayContaining([
        'max_parallel_workers_per_gather=0',
        'idle_in_transaction_session_timeout=10s',
        'jit=off',
      ]),
    );
  } finally {
    await probe.close();
  }
}

describe('when an operator backs up the store while orders flow and restores it elsewhere', () => {
  it(
    'then the service started on the copy holds every order answered before the backup began, as it was',
    () => (TEST_STORE === 'sqlite' ? sqliteBackupRestored() : postgresDumpRestored()),
    180_000,
  );
});
