// DATABASE_URL naming several hosts (libpq's form), against the run's PostgreSQL server: a new connection goes to
// the first host that answers and, with target_session_attrs=read-write, accepts writes; none that will do is
// "unavailable" (503 5030 to a request); a connection whose server refuses a write as read-only is dropped.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDatabase, databaseUrl, dropDatabase } from '../../scripts/postgres.js';
import { freePort } from '../../scripts/redis.js';
import { serverStates } from '../../src/server-changes.js';
import { createPool } from '../../src/store/postgres/postgres.pool.js';
import { isStoreUnavailable } from '../../src/store/store-errors.js';

const name = `t_${crypto.randomBytes(6).toString('hex')}`;
let server: URL;
let dead: string;

/** DATABASE_URL of the test database on `hosts`, with `attrs` when given. */
const urlOn = (hosts: string[], attrs?: string) =>
  `postgres://${server.username}@${hosts.join(',')}/${name}${attrs ? `?target_session_attrs=${attrs}` : ''}`;

beforeAll(async () => {
  server = new URL(databaseUrl(inject('postgresUrl'), name));
  await createDatabase(inject('postgresUrl'), name);
  // A port nothing listens on: a host that is gone.
  dead = `127.0.0.1:${await freePort()}`;
});

afterAll(async () => {
  await dropDatabase(inject('postgresUrl'), name);
});

describe('DATABASE_URL with several hosts', () => {
  it('connects to the first host that answers and accepts writes, and notes it', async () => {
    const pool = createPool(urlOn([dead, server.host], 'read-write'), { timeoutMs: 5000 });
    try {
      await pool.query('CREATE TABLE IF NOT EXISTS t (n int)');
      await pool.query('INSERT INTO t VALUES (1)');
      expect(serverStates().postgres?.server).toBe(server.host);
    } finally {
      await pool.end();
    }
  });

  it('finds no host that accepts writes among read-only ones: unavailable; with `any` a write is refused and its connection dropped', async () => {
    const admin = createPool(databaseUrl(inject('postgresUrl'), name));
    await admin.query(`ALTER DATABASE ${name} SET default_transaction_read_only = on`);
    await admin.end();
    // (Another URL than above: the host found for a URL is kept until its connections meet trouble.)
    const readWrite = createPool(urlOn([server.host, dead], 'read-write'), { timeoutMs: 5000 });
    try {
      const err = await readWrite.query('SELECT 1').catch((e: unknown) => e);
      expect(err).toMatchObject({ code: '08001', message: expect.stringContaining('is read-only') });
      expect(isStoreUnavailable(err)).toBe(true);
    } finally {
      await readWrite.end();
    }
    // `any`: the server is taken as it is; a write meets 25006, unavailable, and the connection is not kept.
    const any = createPool(urlOn([dead, server.host]), { timeoutMs: 5000 });
    try {
      const client = await any.connect();
      const err = await client.query('INSERT INTO t VALUES (2)').catch((e: unknown) => e);
      expect(err).toMatchObject({ code: '25006' });
      expect(isStoreUnavailable(err)).toBe(true);
      client.release();
      expect(any.totalCount).toBe(0);
    } finally {
      await any.end();
    }
  });
});
