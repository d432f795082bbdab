// Test harness: a real app on a private SQLite file and a private queue prefix on the run's real Redis,
// real worker processes spawned with tsx, and a signing helper for supertest.
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import supertest from 'supertest';
import { inject } from 'vitest';
import { sign } from '../../src/auth/signature.js';
import { loadConfig, type Config } from '../../src/config.js';
import { closeDeps, createDeps } from '../../src/container.js';
import type { Deps } from '../../src/deps.js';
import { createApp } from '../../src/http/app.js';
import { createLogger } from '../../src/logger.js';
import type { CatalogListing, CatalogVendor } from '../../src/store/catalog.repository.js';

export interface Credentials {
  clientId: number;
  accessKey: string;
  secretKey: string;
  ccToken: string;
}

export interface TestServiceOptions {
  env?: Record<string, string>;
  clock?: () => number;
}

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Environment shared by the in-process app and spawned processes of one test service. */
function baseEnv(dir: string, prefix: string, redisUrl: string, extra: Record<string, string>) {
  return {
    REDIS_URL: redisUrl,
    DB_PATH: path.join(dir, 'orders.db'),
    QUEUE_PREFIX: prefix,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    LOG_PRETTY: 'false',
    ORDER_WAIT_MS: '10000',
    RATE_LIMIT_PER_S: '0',
    ...extra,
  };
}

export async function createTestService(options: TestServiceOptions = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-test-'));
  const prefix = `t${crypto.randomBytes(5).toString('hex')}`;
  const env = baseEnv(dir, prefix, inject('redisUrl'), options.env ?? {});
  const config: Config = loadConfig(env);
  const logger = createLogger(config, 'test');
  const deps: Deps = createDeps(config, logger, { withOutcomes: true, clock: options.clock });
  const app = createApp(deps);
  const children = new Set<ChildProcess>();

  return {
    dir,
    env,
    config,
    deps,
    app,
    prefix,
    /** A client with one active card (or a declining one). */
    client(name = 'test client', declines = false): Credentials {
      const client = deps.clients.create(name);
      const card = deps.clients.addCard(client.clientId, declines);
      return {
        clientId: client.clientId,
        accessKey: client.accessKey,
        secretKey: client.secretKey,
        ccToken: card.token,
      };
    },
    importCatalog(vendors: CatalogVendor[], listings: CatalogListing[]) {
      deps.catalog.importCatalog(vendors, listings);
    },
    stock(listingId: number): number {
      return (
        (deps.db
          .prepare('SELECT stock FROM listings WHERE listing_id = ?')
          .pluck()
          .get(listingId) as number) ?? -1
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
    async close() {
      await Promise.all([...children].map((child) => stopChild(child)));
      await closeDeps(deps);
      await removeKeys(env.REDIS_URL, prefix);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type TestService = Awaited<ReturnType<typeof createTestService>>;

async function spawnProcess(
  children: Set<ChildProcess>,
  entry: string,
  env: Record<string, string>,
  readyLine?: string,
): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, entry)], {
    cwd: ROOT,
    env: { ...process.env, ...env, LOG_LEVEL: readyLine ? 'info' : env.LOG_LEVEL },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  if (!readyLine) return child;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${entry} not ready in 30 s:\n${output}`)), 30_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(readyLine)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`${entry} exited with ${code}:\n${output}`)));
  });
  child.stdout!.resume();
  return child;
}

export function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.kill(signal);
  });
}

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

/** A supertest request signed as CONTRACT.md section 2 says; `body` objects are sent as JSON text. */
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
  return req;
}
