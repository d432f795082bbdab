import pg from 'pg';
import type { Probe } from './store.probe.js';
import { firstHostUrl, targetedClient } from '../../src/store/postgres/postgres-hosts.js';
import { numberTypes } from '../../src/store/postgres/postgres.pool.js';

/**
 * Rewrites SQLite's `?` placeholders to `$1..$n`, leaving string literals, quoted identifiers and comments
 * alone. A `?` meant as a JSONB operator cannot be written through the probe.
 */
export function toPositional(sql: string): string {
  let n = 0;
  return sql.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*|\/\*[\s\S]*?\*\/|\?/g, (token) =>
    token === '?' ? `$${++n}` : token,
  );
}

/** A probe of the PostgreSQL database at `url`, on its own small pool with the adapter's number parsing. */
export function postgresProbe(url: string): Probe {
  const pool = new pg.Pool({
    Client: targetedClient(url, pg.Client),
    connectionString: firstHostUrl(url),
    max: 2,
    types: numberTypes,
  });
  pool.on('error', () => undefined);
  const all = async <T>(sql: string, params: unknown[]): Promise<T[]> =>
    (await pool.query(toPositional(sql), params)).rows as T[];

  return {
    all<T = Record<string, unknown>>(sql: string, ...params: unknown[]) {
      return all<T>(sql, params);
    },
    async get<T>(sql: string, ...params: unknown[]) {
      return (await all<T>(sql, params))[0];
    },
    async scalar<T = number>(sql: string, ...params: unknown[]) {
      const result = await pool.query({ text: toPositional(sql), values: params, rowMode: 'array' });
      return (result.rows[0] as unknown[] | undefined)?.[0] as T;
    },
    async exec(sql) {
      await pool.query(sql);
    },
    close() {
      return pool.end();
    },
  };
}
