import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/port/store.port.js';
import { openProbe, testStoreEnv, THROUGH_PGBOUNCER, type TestStoreEnv } from '../helpers/test-store.js';

// No startup option (a transaction pooler refuses them): the settings the service wants are defaults of its
// role in its database, set by a migration. A connection opened afterwards has them. (Through PgBouncer the
// server connection may be one the pooler opened before the migration: checked on a direct connection.)
let testStore: TestStoreEnv;
let store: Store;

beforeAll(async () => {
  testStore = await testStoreEnv('/tmp');
  store = await openStore(loadConfig(testStore.env), 'test', () => undefined);
});
afterAll(async () => {
  await store?.close();
  await testStore.drop();
});

describe.skipIf(THROUGH_PGBOUNCER)('the server settings of the PostgreSQL store', () => {
  it('a connection to the migrated database starts no parallel workers and compiles nothing, without a startup option', async () => {
    const probe = openProbe(testStore.env);
    try {
      expect(await probe.scalar("SELECT current_setting('max_parallel_workers_per_gather')")).toBe('0');
      expect(await probe.scalar("SELECT current_setting('jit')")).toBe('off');
    } finally {
      await probe.close();
    }
  });
});
