// Issue 43's settings: a DATABASE_URL naming several hosts in libpq's form, Redis behind Sentinel, and the
// per-process record of which server each link reached.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { parseSentinels } from '../../src/config/redis-url.js';
import { noteServer, onServerChange, serverStates } from '../../src/server-changes.js';
import { parsePostgresHosts } from '../../src/config/postgres-url.js';

const KEY = 'ab'.repeat(32);

describe('parsePostgresHosts', () => {
  it('reads the hosts in order, default port 5432, and target_session_attrs', () => {
    const target = parsePostgresHosts(
      'postgres://svc:p%40ss@db1.internal:5432,db2.internal,[::1]:5433/orders?target_session_attrs=read-write&sslmode=require',
    );
    expect(target.hosts).toEqual([
      { host: 'db1.internal', port: 5432 },
      { host: 'db2.internal', port: 5432 },
      { host: '::1', port: 5433 },
    ]);
    expect(target.readWrite).toBe(true);
    // Each host's own URL keeps the login, database and other parameters, without target_session_attrs.
    expect(target.urlOf(target.hosts[1]!)).toBe(
      'postgres://svc:p%40ss@db2.internal:5432/orders?sslmode=require',
    );
    expect(target.urlOf(target.hosts[2]!)).toBe('postgres://svc:p%40ss@[::1]:5433/orders?sslmode=require');
  });

  it('reads a socket directory as a host, and leaves an empty host to node-postgres', () => {
    const target = parsePostgresHosts(
      'postgres://svc@%2Frun%2Fpostgresql:5433,db2/orders?target_session_attrs=read-write',
    );
    expect(target.hosts).toEqual([
      { host: '/run/postgresql', port: 5433 },
      { host: 'db2', port: 5432 },
    ]);
    expect(target.urlOf(target.hosts[0]!)).toBe('postgres://svc@%2Frun%2Fpostgresql:5433/orders');
    expect(parsePostgresHosts('postgres://svc@/orders?host=/run/postgresql').hosts).toEqual([
      { host: '', port: 5432 },
    ]);
  });

  it('takes one host and any server by default, as before', () => {
    const target = parsePostgresHosts('postgresql://svc@db.internal:6432/orders');
    expect(target).toMatchObject({ hosts: [{ host: 'db.internal', port: 6432 }], readWrite: false });
    expect(target.urlOf(target.hosts[0]!)).toBe('postgresql://svc@db.internal:6432/orders');
  });

  it.each([
    ['postgres://svc@db1:5432,/orders', /'' is not a host/],
    ['postgres://svc@db1:99999/orders', /'db1:99999' is not a host/],
    [
      'postgres://svc@db1,db2/orders?target_session_attrs=standby',
      /target_session_attrs=standby is not supported/,
    ],
    ['mysql://svc@db1/orders', /must be a postgres:\/\//],
  ])('refuses %s, saying why', (url, message) => {
    expect(() => parsePostgresHosts(url)).toThrow(message);
  });
});

describe('DATABASE_URL with several hosts', () => {
  it('is taken, with DATABASE_DIRECT_URL naming the same database', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://svc@pgbouncer1:6432,pgbouncer2:6432/orders?target_session_attrs=read-write',
      DATABASE_POOLING: 'transaction',
      DATABASE_DIRECT_URL: 'postgres://svc@db1:5432,db2:5432/orders?target_session_attrs=read-write',
      SECRETS_KEY: KEY,
    });
    expect(config.DATABASE_URL).toContain('pgbouncer2');
  });

  it('refuses a bad host list or an unsupported target_session_attrs, naming the variable', () => {
    expect(() =>
      loadConfig({
        DATABASE_URL: 'postgres://svc@db1,db2/orders?target_session_attrs=primary',
        SECRETS_KEY: KEY,
      }),
    ).toThrow(/DATABASE_URL: target_session_attrs=primary is not supported/);
    expect(() =>
      loadConfig({
        DATABASE_URL: 'postgres://svc@db1,db2/orders',
        DATABASE_DIRECT_URL: 'postgres://svc@db1,db2/other',
        SECRETS_KEY: KEY,
      }),
    ).toThrow(/must name DATABASE_URL's database \(orders\)/);
  });
});

describe('REDIS_SENTINELS', () => {
  it('takes the Sentinels and the master name (and their password)', () => {
    const config = loadConfig({
      REDIS_SENTINELS: '10.0.0.1:26379, 10.0.0.2:26379,[fd00::3]:26380',
      REDIS_SENTINEL_MASTER: 'orders',
      REDIS_SENTINEL_PASSWORD: 'sentinel-secret',
    });
    expect(parseSentinels(config.REDIS_SENTINELS!)).toEqual([
      { host: '10.0.0.1', port: 26379 },
      { host: '10.0.0.2', port: 26379 },
      { host: 'fd00::3', port: 26380 },
    ]);
    expect(config.REDIS_SENTINEL_MASTER).toBe('orders');
  });

  it.each([
    [{ REDIS_SENTINELS: '10.0.0.1' }, /REDIS_SENTINELS: '10.0.0.1' is not host:port/],
    [{ REDIS_SENTINELS: '10.0.0.1:26379' }, /REDIS_SENTINEL_MASTER: required with REDIS_SENTINELS/],
    [{ REDIS_SENTINEL_MASTER: 'orders' }, /REDIS_SENTINEL_MASTER: only with REDIS_SENTINELS/],
    [
      { REDIS_SENTINELS: 'h:1', REDIS_SENTINEL_MASTER: 'orders', REDIS_CLUSTER: 'true' },
      /REDIS_SENTINELS: not with REDIS_CLUSTER=true/,
    ],
  ])('refuses %o, naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });
});

describe('server changes', () => {
  it('counts a change of server once, and tells the listener once, however many connections report it', () => {
    const told: string[] = [];
    onServerChange((link, now, before) => told.push(`${link} ${before} -> ${now.server} (${now.changes})`));
    noteServer('redis', '10.0.0.1:6379', 1000);
    noteServer('redis', '10.0.0.1:6379', 2000);
    noteServer('redis', '10.0.0.2:6379', 3000);
    noteServer('redis', '10.0.0.2:6379', 4000);
    expect(serverStates().redis).toEqual({ server: '10.0.0.2:6379', since: 3000, changes: 1 });
    expect(told).toEqual(['redis 10.0.0.1:6379 -> 10.0.0.2:6379 (1)']);
  });
});
