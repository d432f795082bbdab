import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';

const KEY = 'ab'.repeat(32);
const POOLER = 'postgres://svc@pgbouncer.internal:6432/orders';
const SERVER = 'postgres://svc@db.internal:5432/orders';

describe('DATABASE_POOLING and DATABASE_DIRECT_URL', () => {
  it('is a direct connection by default, and takes a transaction pooler with the direct URL beside it', () => {
    expect(loadConfig({ DATABASE_URL: SERVER, SECRETS_KEY: KEY }).DATABASE_POOLING).toBe('direct');
    const config = loadConfig({
      DATABASE_URL: POOLER,
      DATABASE_POOLING: 'transaction',
      DATABASE_DIRECT_URL: SERVER,
      SECRETS_KEY: KEY,
    });
    expect([config.DATABASE_POOLING, config.DATABASE_DIRECT_URL]).toEqual(['transaction', SERVER]);
  });

  it.each([
    [{ DATABASE_POOLING: 'statement' }, /DATABASE_POOLING: /],
    [
      { DATABASE_POOLING: 'transaction', DATABASE_URL: undefined },
      /DATABASE_POOLING: only with DATABASE_URL/,
    ],
    [{ DATABASE_DIRECT_URL: 'mysql://db/orders' }, /DATABASE_DIRECT_URL: must be a postgres:\/\//],
    [
      { DATABASE_DIRECT_URL: 'postgres://svc@db.internal:5432/other' },
      /must name DATABASE_URL's database \(orders\)/,
    ],
    [
      { DATABASE_POOLING: 'transaction', DATABASE_DIRECT_URL: POOLER },
      /DATABASE_DIRECT_URL: reaches the same host and port as DATABASE_URL/,
    ],
  ])('refuses %o, naming the variable', (env, message) => {
    expect(() => loadConfig({ DATABASE_URL: POOLER, SECRETS_KEY: KEY, ...env })).toThrow(message);
  });
});
