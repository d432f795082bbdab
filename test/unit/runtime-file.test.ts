import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  readRuntimeFile,
  withRuntimeSettings,
  writeRuntimeFile,
  type RuntimeFile,
} from '../../src/cli/runtime-file.js';

// What a running `npm start` tells the operator commands (data/runtime.json), and when a command takes it.

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'runtime-file-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const KEY = 'ab'.repeat(32);
const running: RuntimeFile = {
  pid: process.pid,
  apiUrl: 'http://127.0.0.1:3000',
  profile: 'data/demo-client.postgres.json',
  env: {
    REDIS_URL: 'redis://127.0.0.1:41234',
    DB_PATH: '/srv/books/orders.db',
    DATABASE_URL: 'postgres://books@127.0.0.1:5432/books',
    SECRETS_KEY: KEY,
  },
};

describe('the runtime file of npm start', () => {
  it('is written for its owner only, and read back while its process runs', () => {
    const file = path.join(dir, 'data', 'runtime.json');
    writeRuntimeFile(file, running);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(readRuntimeFile(file)).toEqual(running);
  });

  it('when nothing is set, then a command takes its Redis, its store and the key that opens the store', () => {
    const { env, used } = withRuntimeSettings({}, running);
    expect(env).toMatchObject(running.env);
    expect(used).toEqual(['REDIS_URL', 'DB_PATH', 'DATABASE_URL', 'SECRETS_KEY']);
  });

  it('when the store set is the one it runs on, then the rest is taken from it too', () => {
    const { env, used } = withRuntimeSettings({ DB_PATH: '/srv/books/../books/orders.db' }, running);
    expect(env.REDIS_URL).toBe(running.env.REDIS_URL);
    expect(used).not.toContain('DB_PATH');
    expect(withRuntimeSettings({ DATABASE_URL: running.env.DATABASE_URL }, running).env.SECRETS_KEY).toBe(
      KEY,
    );
  });

  it('when another store or Redis is set, then nothing of the running service is taken', () => {
    for (const aimed of [{ DB_PATH: '/elsewhere/orders.db' }, { REDIS_URL: 'redis://10.0.0.9:6379' }])
      expect(withRuntimeSettings(aimed, running)).toEqual({ env: aimed, used: [] });
  });

  it('when the service runs with other deadlines, then a command judges by them unless it sets its own', () => {
    const judged = { ...running, env: { ...running.env, QUEUED_STALE_AFTER_S: '5' } };
    expect(withRuntimeSettings({}, judged).env.QUEUED_STALE_AFTER_S).toBe('5');
    // Setting one aims the command at no other service: the store and Redis still come from the file.
    const own = withRuntimeSettings({ QUEUED_STALE_AFTER_S: '60' }, judged);
    expect(own.env).toMatchObject({ QUEUED_STALE_AFTER_S: '60', REDIS_URL: running.env.REDIS_URL });
  });

  it("when a key is set, then the operator's key wins", () => {
    const own = 'cd'.repeat(32);
    expect(withRuntimeSettings({ SECRETS_KEY: own }, running).env.SECRETS_KEY).toBe(own);
  });
});
