// A store that cannot be opened (a wrong SECRETS_KEY, a PostgreSQL server that is not there, a DB_PATH into a
// folder that does not exist) stops every process and the admin CLI at start: one line naming the cause, exit
// code 1, no stack trace.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../scripts/redis.js';
import { TEST_STORE, testStoreEnv, type TestStoreEnv } from '../helpers/test-store.js';
import { collect, type CliRun } from '../helpers/wait.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');

const ENTRIES = {
  web: ['src/server.ts'],
  worker: ['workers/order.worker.ts'],
  clock: ['jobs/clock.ts'],
  admin: ['src/cli/admin.cli.ts', 'client:create', '--name', 'Acme Books'],
};

let dir: string;
let store: TestStoreEnv;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'store-open-'));
  store = await testStoreEnv(dir);
});
afterAll(async () => {
  await store.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

function run(args: string[], env: Record<string, string>): Promise<CliRun> {
  const service = {
    REDIS_URL: inject('redisUrl'),
    QUEUE_PREFIX: `open${process.pid}`,
    PORT: '0',
    METRICS_PORT: '0',
    LOG_LEVEL: 'info',
  };
  return collect(spawn(TSX, args, { cwd: ROOT, env: { PATH: process.env.PATH, ...service, ...env } }));
}

/** Each of web, worker, clock and admin, started with `env`: what it printed, and how it exited. */
async function startEach(env: Record<string, string>): Promise<Record<string, CliRun>> {
  const runs = await Promise.all(Object.values(ENTRIES).map((args) => run(args, env)));
  return Object.fromEntries(Object.keys(ENTRIES).map((name, i) => [name, runs[i]!]));
}

function expectOneLine(runs: Record<string, CliRun>, cause: RegExp): void {
  for (const [name, { code, stdout, stderr }] of Object.entries(runs)) {
    const lines = `${stdout}${stderr}`.split('\n').filter((line) => line.trim() !== '');
    expect({ name, code, lines }).toEqual({ name, code: 1, lines: [expect.stringMatching(cause)] });
    expect(lines[0]).not.toMatch(/\bat .*\.(ts|js):\d+/);
  }
}

describe(`a store that cannot be opened, on ${TEST_STORE}`, () => {
  it('when SECRETS_KEY is not the key the store was sealed with, then each process says so in one line and exits 1', async () => {
    const created = await run(ENTRIES.admin, store.env);
    expect(created.code).toBe(0);
    const runs = await startEach({ ...store.env, SECRETS_KEY: crypto.randomBytes(32).toString('hex') });
    expectOneLine(runs, /SECRETS_KEY \(key id [0-9a-f]+\) does not open this store's secrets/);
  }, 90_000);

  it.skipIf(TEST_STORE !== 'postgres')(
    'when the PostgreSQL server does not answer, then each process says so in one line and exits 1',
    async () => {
      const url = new URL(store.env.DATABASE_URL!);
      url.port = String(await freePort());
      const runs = await startEach({ ...store.env, DATABASE_URL: url.toString() });
      expectOneLine(runs, /ECONNREFUSED/);
    },
    90_000,
  );

  it.skipIf(TEST_STORE !== 'sqlite')(
    'when DB_PATH names a folder that does not exist, then each process refuses it, naming it, and creates nothing',
    async () => {
      const missing = path.join(dir, 'typo');
      const runs = await startEach({ DB_PATH: path.join(missing, 'orders.db') });
      for (const { code, stdout, stderr } of Object.values(runs)) {
        expect(code).toBe(1);
        expect(`${stdout}${stderr}`).toContain(`DB_PATH: the folder ${missing} does not exist`);
      }
      expect(fs.existsSync(missing)).toBe(false);
    },
    90_000,
  );
});
