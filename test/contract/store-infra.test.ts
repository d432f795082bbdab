// Smoke test of the two-store test infrastructure: each store project gets a private store from testStoreEnv
// and a working raw-SQL probe on it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import type { Probe } from '../helpers/store.probe.js';
import { openProbe, TEST_STORE, testStoreEnv, type TestStoreEnv } from '../helpers/test-store.js';

describe(`store test infrastructure (${TEST_STORE})`, () => {
  let dir: string;
  let store: TestStoreEnv;
  let probe: Probe;
  let probeOpen = false;
  const closeProbe = async () => {
    if (probeOpen) await probe.close();
    probeOpen = false;
  };

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-infra-'));
    store = await testStoreEnv(dir);
    probe = openProbe(store.env);
    probeOpen = true;
  });

  afterEach(async () => {
    await closeProbe();
    await store?.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('runs the store its project names', ({ task }) => {
    expect(TEST_STORE).toBe(task.file.projectName);
    expect(store.env.DB_PATH).toBe(path.join(dir, 'orders.db'));
  });

  it('creates a table, writes and reads it back through the probe', async () => {
    await probe.exec('CREATE TABLE probe_check (id INTEGER PRIMARY KEY, name TEXT NOT NULL)');
    await probe.exec("INSERT INTO probe_check (id, name) VALUES (1, 'one'), (2, 'two')");
    expect(await probe.all('SELECT id, name FROM probe_check ORDER BY id')).toEqual([
      { id: 1, name: 'one' },
      { id: 2, name: 'two' },
    ]);
    expect(await probe.get('SELECT name FROM probe_check WHERE id = 2')).toEqual({ name: 'two' });
    expect(await probe.get('SELECT name FROM probe_check WHERE id = 3')).toBeUndefined();
    expect(Number(await probe.scalar('SELECT count(*) FROM probe_check'))).toBe(2);
    await expect(probe.exec('SELECT * FROM no_such_table')).rejects.toThrow(/no_such_table/);
  });

  // Store-specific checks are only defined in their store's project (not reported as skipped in the other).
  if (TEST_STORE === 'sqlite') {
    it('keeps the SQLite store in the test directory', async () => {
      expect(store.env.DATABASE_URL).toBeUndefined();
      await probe.exec('CREATE TABLE t (x INTEGER)');
      expect(fs.existsSync(store.env.DB_PATH!)).toBe(true);
    });
  }

  if (TEST_STORE === 'postgres') {
    it('gives each store its own database, dropped afterwards', async () => {
      const serverUrl = inject('postgresUrl');
      expect(serverUrl).toMatch(/^postgres(ql)?:\/\//);
      const url = new URL(store.env.DATABASE_URL!);
      const name = url.pathname.slice(1);
      expect(name).toMatch(/^t_[0-9a-f]{16}$/);
      expect(await probe.scalar('SELECT 1')).toBe(1);
      expect(await probe.scalar('SELECT current_database()')).toBe(name);

      const other = await testStoreEnv(dir);
      expect(other.env.DATABASE_URL).not.toBe(store.env.DATABASE_URL);
      const server = openProbe({ DATABASE_URL: serverUrl });
      try {
        const exists = () =>
          server.scalar<boolean>(`SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = '${name}')`);
        expect(await exists()).toBe(true);
        await closeProbe();
        await store.drop();
        expect(await exists()).toBe(false);
      } finally {
        await other.drop();
        await server.close();
      }
    });
  }
});
