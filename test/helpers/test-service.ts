// Test harness: a real app on a private store (a SQLite file or a PostgreSQL database, by the vitest project)
// and a private queue prefix on the run's real Redis, real worker processes spawned with tsx, a raw-SQL probe
// of the store, and a signing helper for supertest.
import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import supertest from 'supertest';
import { inject } from 'vitest';
import { sign } from '../../src/auth/signature.js';
import { loadConfig, type Config } from '../../src/config/config.js';
import { closeDeps, createDeps } from '../../src/container.js';
import type { Deps } from '../../src/deps.js';
import { createApp } from '../../src/http/app.js';
import { createLogger } from '../../src/logger.js';
import { addCard, createClient } from '../../src/services/client-keys.js';
import type { CatalogListing, CatalogVendor } from '../../src/store/port/store.port.js';
import { spawnProcess, stopChild } from './child-processes.js';
import { checkMoney } from './money-check.js';
import { conformsToDocument } from './openapi-validator.js';
import { openProbe, testStoreEnv } from './test-store.js';

export interface Credentials {
  clientId: number;
  accessKey: string;
  secretKey: string;
  ccToken: string;
}

export interface TestServiceOptions {
  env?: Record<string, string>;
  clock?: () => number;
  /** Changes the private store's variables (DATABASE_URL…) before anything uses them: to put a proxy between. */
  storeEnv?: (env: Record<string, string>) => Record<string, string>;
}

/** Environment shared by the in-process app and spawned processes of one test service. */
function baseEnv(
  store: Record<string, string>,
  prefix: string,
  redisUrl: string,
  extra: Record<string, string>,
) {
  return {
    REDIS_URL: redisUrl,
    ...store,
    QUEUE_PREFIX: prefix,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    LOG_PRETTY: 'false',
    ORDER_WAIT_MS: '10000',
    RATE_LIMIT_PER_S: '0',
    // A spawned web process's metrics listener on a free port of its own (tests that scrape one choose it).
    METRICS_PORT: '0',
    // No balancer in front to wait for: a web stops at once (test/deploy sets its drain itself).
    SHUTDOWN_DRAIN_MS: '0',
    ...extra,
  };
}

export async function createTestService(options: TestServiceOptions = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-test-'));
  const prefix = `t${crypto.randomBytes(5).toString('hex')}`;
  const store = await testStoreEnv(dir);
  const storeEnv = options.storeEnv?.(store.env) ?? store.env;
  const env = baseEnv(storeEnv, prefix, inject('redisUrl'), options.env ?? {});
  const config: Config = loadConfig(env);
  const logger = createLogger(config, 'test');
  const deps: Deps = await createDeps(config, logger, { withOutcomes: true, clock: options.clock });
  const app = createApp(deps);
  const probe = openProbe(env);
  const children = new Set<ChildProcess>();

  return {
    dir,
    env,
    config,
    deps,
    app,
    prefix,
    /** Raw SQL on the store (`?` placeholders on both stores), for what a client cannot observe. */
    probe,
    /** A client with one active card (or a declining one). */
    async client(name = 'test client', declines = false): Promise<Credentials> {
      const client = await createClient(deps.store.clients, name, Date.now());
      const card = await addCard(deps.store.clients, client.clientId, declines, Date.now());
      return {
        clientId: client.clientId,
        accessKey: client.accessKey,
        secretKey: client.secretKey,
        ccToken: card.token,
      };
    },
    importCatalog(vendors: CatalogVendor[], listings: CatalogListing[]): Promise<void> {
      return deps.store.catalog.importCatalog(vendors, listings);
    },
    async stock(listingId: number): Promise<number> {
      return (
        (await probe.scalar<number | undefined>(
          'SELECT stock FROM listings WHERE listing_id = ?',
          listingId,
        )) ?? -1
      );
    },
    /** Spawns a real worker process (`npm run worker` without npm) on this service's store and queue. */
    async startWorker(extraEnv: Record<string, string> = {}): Promise<ChildProcess> {
      return spawnProcess(children, 'workers/order.worker.ts', { ...env, ...extraEnv }, 'worker ready');
    },
    async spawn(
      entry: string,
      extraEnv: Record<string, string> = {},
      readyLine?: string,
    ): Promise<ChildProcess> {
      return spawnProcess(children, entry, { ...env, ...extraEnv }, readyLine);
    },
    /**
     * Stops everything; first, unless told otherwise, checks that every settled order's gateway, ledger and
     * bought shares agree (after bringing a lagging gateway to its ledger, as reconciliation would).
     */
    async close({ checkMoney: check = true }: { checkMoney?: boolean } = {}) {
      await Promise.all([...children].map((child) => stopChild(child)));
      try {
        if (check) await checkMoney(probe, deps);
      } finally {
        await closeDeps(deps);
        await probe.close();
        await store.drop();
        await removeKeys(env.REDIS_URL, config.REDIS_PREFIX);
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

export type TestService = Awaited<ReturnType<typeof createTestService>>;

// The harness's callers start and stop processes through it too.
export { spawnProcess, stopChild };

async function removeKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
  } catch {
    // A test that stopped its Redis on purpose leaves nothing to clean.
  } finally {
    redis.disconnect();
  }
}

export interface SignOptions {
  requestId?: string;
  date?: string;
  headers?: Record<string, string>;
  contentType?: string;
}

/** A supertest request signed as docs/api.md#signing says; `body` objects are sent as JSON text. */
export function signed(
  app: Parameters<typeof supertest>[0],
  creds: Pick<Credentials, 'accessKey' | 'secretKey'>,
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH',
  pathWithQuery: string,
  body?: unknown,
  options: SignOptions = {},
) {
  const raw = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const requestId = options.requestId ?? crypto.randomUUID();
  const date = options.date ?? new Date().toISOString();
  const [p = '', q = ''] = pathWithQuery.split(/\?(.*)/s);
  const signature = sign(creds.secretKey, { method, path: p, rawQuery: q, date, requestId, body: raw });
  const agent = supertest(app);
  let req = agent[method.toLowerCase() as 'get'](pathWithQuery)
    .set('Svc-RequestId', requestId)
    .set('Svc-Access-Key', creds.accessKey)
    .set('Svc-Date', date)
    .set('Svc-Signature', signature);
  for (const [name, value] of Object.entries(options.headers ?? {})) req = req.set(name, value);
  if (raw !== undefined) req = req.set('Content-Type', options.contentType ?? 'application/json').send(raw);
  // Every response a test receives must be one the OpenAPI document describes.
  return req.expect(conformsToDocument(method, pathWithQuery));
}
