// Several hosts on one machine: web, two workers and the clock, each in a working directory of its own, share
// nothing but DATABASE_URL, SECRETS_KEY and REDIS_URL. Under 200 buyers for 50 copies a worker is SIGKILLed and
// Redis restarts empty; the store and reconciliation must still end with exactly 50 copies sold, each charged once.
import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startPrivateRedis, type RunningRedis } from '../../scripts/redis.js';
import { createSigningClient, type SigningClient } from '../helpers/signed-client.js';
import { loadConfig } from '../../src/config/config.js';
import { addCard, createClient } from '../../src/services/client-keys.js';
import { openStore } from '../../src/store/open-store.js';
import type { Probe } from '../helpers/store.probe.js';
import { LISTINGS, orderBody, VENDORS } from '../helpers/fixtures.js';
import { ledgerBalance } from '../helpers/ledger.js';
import { spawnProcess, stopChild } from '../helpers/test-service.js';
import { openProbe, testStoreEnv, type TestStoreEnv } from '../helpers/test-store.js';
import { logLines, sleep, until } from '../helpers/wait.js';

const LISTING = 2002;
const COPIES = 50;
const BUYERS = 200;

let store: TestStoreEnv;
let redis: RunningRedis;
let probe: Probe;
let port: number;
const hosts = new Set<ChildProcess>();
const dirs: string[] = [];

/** One "host": its own working directory and only the shared variables (plus its own port and settings). */
function startHost(entry: string, readyLine: string, extra: Record<string, string> = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-host-'));
  dirs.push(dir);
  const env = {
    DATABASE_URL: store.env.DATABASE_URL,
    // Behind a transaction pooler (project "pgbouncer"), every host says so.
    ...(store.env.DATABASE_POOLING ? { DATABASE_POOLING: store.env.DATABASE_POOLING } : {}),
    SECRETS_KEY: store.env.SECRETS_KEY,
    REDIS_URL: redis.url,
    QUEUE_PREFIX: 'hosts',
    DB_PATH: path.join(dir, 'unused.db'),
    LOG_PRETTY: 'false',
    RATE_LIMIT_PER_S: '0',
    QUEUED_STALE_AFTER_S: '2',
    RECONCILE_CRON: '*/2 * * * * *',
    ORDER_WAIT_MS: '0',
    ...extra,
  };
  return spawnProcess(hosts, entry, env, readyLine, { cwd: dir, isolated: true });
}

beforeAll(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-hosts-'));
  dirs.push(dir);
  store = await testStoreEnv(dir);
  if (!store.env.DATABASE_URL) throw new Error('the several-hosts test runs on PostgreSQL');
  redis = await startPrivateRedis();
  probe = openProbe(store.env);
  port = await freePort();
});

afterAll(async () => {
  await Promise.all([...hosts].map((child) => stopChild(child, 'SIGKILL')));
  await probe?.close();
  await redis?.stop();
  await store?.drop();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

async function buyers(): Promise<{ client: SigningClient; ccToken: string }[]> {
  const seed = await openStore(loadConfig(store.env), 'seed');
  try {
    const listing = { ...LISTINGS.find((l) => l.listingId === LISTING)!, quantity: COPIES };
    await seed.catalog.importCatalog(VENDORS, [listing]);
    const result = [];
    for (let i = 0; i < 20; i += 1) {
      const client = await createClient(seed.clients, `buyer ${i}`, Date.now());
      const card = await addCard(seed.clients, client.clientId, false, Date.now());
      const baseUrl = `http://127.0.0.1:${port}`;
      const signing = createSigningClient({
        baseUrl,
        accessKey: client.accessKey,
        secretKey: client.secretKey,
      });
      result.push({ client: signing, ccToken: card.token });
    }
    return result;
  } finally {
    await seed.close();
  }
}

/** Places one order, retrying the same request id while the web host cannot answer (Redis restarting). */
async function buy(buyer: { client: SigningClient; ccToken: string }): Promise<number> {
  const requestId = crypto.randomUUID();
  const body = orderBody(buyer.ccToken, { listings: [{ listingId: LISTING, quantity: 1 }] });
  for (let attempt = 0; ; attempt += 1) {
    const response = await buyer.client
      .request<{ orderId: number }>('POST', '/v1/orders', body, {
        requestId,
        headers: { Prefer: 'respond-async' },
      })
      .catch(() => null);
    if (response?.status === 200) return response.body.orderId;
    if (attempt >= 50) throw new Error(`order not accepted: ${JSON.stringify(response?.body)}`);
    await sleep(200);
  }
}

describe('several hosts sharing only DATABASE_URL, SECRETS_KEY and REDIS_URL', () => {
  it('when 200 buyers race for 50 copies while a worker dies and Redis restarts empty, then exactly 50 are sold, each charged once', async () => {
    const people = await buyers();
    await startHost('src/server.ts', 'web listening', { PORT: String(port) });
    // Slow payments keep jobs in flight and waiting, so the kill and the restart both lose some.
    const slow = { WORKER_CONCURRENCY: '2', SANDBOX_PAYMENT_LATENCY_MS: '40' };
    const doomed = await startHost('workers/order.worker.ts', 'worker ready', slow);
    await startHost('workers/order.worker.ts', 'worker ready', slow);
    const clockLog = logLines(await startHost('jobs/clock.ts', 'clock ready'));

    const orders: Promise<number>[] = [];
    for (let i = 0; i < BUYERS; i += 1) {
      orders.push(buy(people[i % people.length]!));
      if (i === 60) doomed.kill('SIGKILL');
      if (i === 120) {
        await redis.stop();
        redis = await startPrivateRedis(Number(new URL(redis.url).port));
      }
      if (i % 20 === 19) await sleep(50);
    }
    const ids = await Promise.all(orders);
    expect(new Set(ids).size).toBe(BUYERS);
    expect(await probe.scalar("SELECT count(*) FROM orders WHERE phase <> 'settled'")).toBeGreaterThan(0);

    await until(
      async () => (await probe.scalar("SELECT count(*) FROM orders WHERE phase <> 'settled'")) === 0,
      90_000,
      'every accepted order settled',
    );
    // The jobs Redis lost were found and enqueued again by the clock host.
    expect(clockLog.filter((line) => line.msg === 'order enqueued again').length).toBeGreaterThan(0);
    const byStatus = await probe.all<{ status: number; n: number }>(
      'SELECT status, count(*) AS n FROM order_items GROUP BY status ORDER BY status',
    );
    expect(byStatus).toEqual([
      { status: 5, n: COPIES },
      { status: 14, n: BUYERS - COPIES },
    ]);
    expect(await probe.scalar('SELECT stock FROM listings WHERE listing_id = ?', LISTING)).toBe(0);
    expect(await probe.scalar('SELECT count(*) FROM payments')).toBe(COPIES);
    expect(await probe.scalar("SELECT count(*) FROM ledger_entries WHERE kind = 'authorize'")).toBe(COPIES);
    for (const orderId of ids) {
      const { ledger, bought, gateway } = await ledgerBalance(probe, orderId);
      expect({ orderId, ledger, gateway: gateway ?? 0 }).toEqual({
        orderId,
        ledger: bought,
        gateway: bought,
      });
    }
  });
});
