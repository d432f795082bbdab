import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { createPool, FIXED_RESULT } from '../../src/store/postgres/postgres.pool.js';
import { testStoreEnv, THROUGH_PGBOUNCER, type TestStoreEnv } from '../helpers/test-store.js';

// On a direct connection the adapter's connections prepare each statement with parameters once
// (src/store/postgres/postgres.pool.ts); behind a transaction pooler (DATABASE_POOLING=transaction) they name none:
// consecutive transactions of one client connection run on different server connections.
let store: TestStoreEnv;
let pool: pg.Pool;

beforeAll(async () => {
  store = await testStoreEnv('/tmp');
  pool = createPool(store.env.DATABASE_URL!, {
    poolSize: 4,
    ...(THROUGH_PGBOUNCER ? { pooling: 'transaction' as const } : {}),
  });
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

describe.skipIf(THROUGH_PGBOUNCER)('prepared statements on a direct connection to PostgreSQL', () => {
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

  it('prepares a statement with a * that says its result columns are named, and not one of several statements', async () => {
    const client = await pool.connect();
    try {
      const fixed = `${FIXED_RESULT} SELECT x.a FROM (SELECT * FROM t) x WHERE x.id = $1`;
      expect((await client.query(fixed, [2])).rows).toEqual([{ a: 20 }]);
      await client
        .query(`${FIXED_RESULT} SELECT 1; SELECT a FROM t WHERE id = $1`, [1])
        .catch(() => undefined);
      // The connection may hold statements of the cases before.
      expect((await prepared(client)).filter((name) => name.includes(FIXED_RESULT))).toEqual([fixed]);
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

  it("prepares the pool's own queries (pool.query) too", async () => {
    const single = createPool(store.env.DATABASE_URL!, { poolSize: 1 });
    try {
      for (const id of [1, 2]) await single.query('SELECT id FROM t WHERE a = $1', [id * 10]);
      const client = await single.connect();
      try {
        expect(await prepared(client)).toEqual(['SELECT id FROM t WHERE a = $1']);
      } finally {
        client.release();
      }
    } finally {
      await single.end();
    }
  });

  it('with DATABASE_POOLING=transaction names no statement', async () => {
    const unnamed = createPool(store.env.DATABASE_URL!, { poolSize: 1, pooling: 'transaction' });
    const client = await unnamed.connect();
    try {
      for (const id of [1, 2, 1]) await client.query('SELECT id FROM t WHERE id = $1', [id]);
      expect(await prepared(client)).toEqual([]);
    } finally {
      client.release();
      await unnamed.end();
    }
  });
});

describe.runIf(THROUGH_PGBOUNCER)('statements through PgBouncer in transaction mode', () => {
  it('many connections running the same statements at once, in and out of transactions, all get their rows', async () => {
    const runs = Array.from({ length: 40 }, async (_, n) => {
      const id = (n % 2) + 1;
      const single = await pool.query<{ a: number }>('SELECT a FROM t WHERE id = $1', [id]);
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const inTx = await client.query<{ a: number }>('SELECT a FROM t WHERE id = $1', [id]);
        // Within one transaction the server connection is this client's: it holds no named statement.
        const names = await prepared(client);
        await client.query('COMMIT');
        return { single: single.rows[0]!.a, inTx: inTx.rows[0]!.a, names };
      } finally {
        client.release();
      }
    });
    for (const [n, run] of (await Promise.all(runs)).entries()) {
      const a = ((n % 2) + 1) * 10;
      expect(run).toEqual({ single: a, inTx: a, names: [] });
    }
  });
});
