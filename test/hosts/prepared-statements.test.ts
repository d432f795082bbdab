import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { createPool } from '../../src/store/postgres/postgres.pool.js';
import { testStoreEnv, type TestStoreEnv } from '../helpers/test-store.js';

// The adapter's connections prepare each statement with parameters once (src/store/postgres/postgres.pool.ts).
let store: TestStoreEnv;
let pool: pg.Pool;

beforeAll(async () => {
  store = await testStoreEnv('/tmp');
  pool = createPool(store.env.DATABASE_URL!, { poolSize: 2 });
  await pool.query('CREATE TABLE t (id int PRIMARY KEY, a int NOT NULL)');
  await pool.query('INSERT INTO t VALUES (1, 10), (2, 20)');
});
afterAll(async () => {
  await pool.end();
  await store.drop();
});

const prepared = async (client: pg.PoolClient) =>
  (await client.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements')).rows.map(
    (r) => r.statement,
  );

describe('prepared statements on PostgreSQL', () => {
  it('prepares a statement with parameters once per connection, and not one with a *', async () => {
    const client = await pool.connect();
    try {
      for (const id of [1, 2, 1]) await client.query('SELECT a FROM t WHERE id = $1', [id]);
      await client.query('SELECT * FROM t WHERE id = $1', [1]);
      expect(await prepared(client)).toEqual(['SELECT a FROM t WHERE id = $1']);
    } finally {
      client.release();
    }
  });

  it('after a schema change makes a prepared statement stale, one execution fails and the next prepares it again', async () => {
    const client = await pool.connect();
    try {
      expect((await client.query('SELECT a FROM t WHERE id = $1', [2])).rows).toEqual([{ a: 20 }]);
      await pool.query('ALTER TABLE t ALTER COLUMN a TYPE text');
      await expect(client.query('SELECT a FROM t WHERE id = $1', [2])).rejects.toMatchObject({
        code: '0A000',
      });
      expect((await client.query('SELECT a FROM t WHERE id = $1', [2])).rows).toEqual([{ a: '20' }]);
    } finally {
      client.release();
    }
  });
});
