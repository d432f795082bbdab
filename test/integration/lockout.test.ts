import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../scripts/redis.js';
import { createSigningClient } from '../helpers/signed-client.js';
import { loadConfig } from '../../src/config/config.js';
import { Lockout } from '../../src/redis/lockout.js';
import { createLogger } from '../../src/logger.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';

const redis = new Redis(inject('redisUrl'));
const logger = createLogger({ LOG_LEVEL: 'silent', LOG_PRETTY: 'false' }, 'test');
const policy = { name: 'probe', maxFailures: 3, windowMs: 60_000, lockMs: 600_000 };
const prefix = loadConfig({ QUEUE_PREFIX: `lockout${process.pid}` }).REDIS_PREFIX;
afterAll(() => redis.disconnect());

describe('a lockout shared by two web processes', () => {
  it('when one process locks a subject, then the other refuses it once its one-second memory has passed', async () => {
    const web1 = new Lockout(redis, prefix, policy, logger);
    const web2 = new Lockout(redis, prefix, policy, logger);
    const t = Date.now();
    expect(await web2.lockedForMs('key-a', t)).toBe(0);
    expect(await web1.recordFailure('key-a', t)).toBe(false);
    expect(await web1.recordFailure('key-a', t + 1)).toBe(false);
    expect(await web1.recordFailure('key-a', t + 2)).toBe(true);
    expect(await web1.lockedForMs('key-a', t + 3)).toBeGreaterThan(599_000);
    expect(await web2.lockedForMs('key-a', t + 500)).toBe(0);
    expect(await web2.lockedForMs('key-a', t + 1001)).toBeGreaterThan(590_000);
  });

  it('when a burst of checks comes while the connection is being made, then they share one wait for it', async () => {
    const starting = new Redis(inject('redisUrl'));
    try {
      expect(starting.status).not.toBe('ready');
      const before = starting.listenerCount('ready');
      const lockout = new Lockout(starting, prefix, policy, logger);
      const checks = Array.from({ length: 20 }, (_, i) => lockout.lockedForMs(`burst-${i}`, Date.now()));
      expect(starting.listenerCount('ready') - before).toBe(1);
      expect(await Promise.all(checks)).toEqual(Array.from({ length: 20 }, () => 0));
    } finally {
      starting.disconnect();
    }
  });

  it('when failures are spread beyond the window, then they do not add up to a lock', async () => {
    const web = new Lockout(redis, prefix, { ...policy, windowMs: 1000 }, logger);
    const t = Date.now();
    await web.recordFailure('key-b', t - 5000);
    await web.recordFailure('key-b', t - 3000);
    expect(await web.recordFailure('key-b', t)).toBe(false);
    expect(await web.lockedForMs('key-b', t)).toBe(0);
  });
});

describe('failed authentications locked per access key and client address (TRUST_PROXY=loopback)', () => {
  let service: TestService;
  let base: string;
  beforeAll(async () => {
    service = await createTestService({ env: { ADMIN_USER: 'ops', ADMIN_PASSWORD: 'correct horse' } });
    const port = await freePort();
    await service.spawn('src/server.ts', { PORT: String(port), TRUST_PROXY: 'loopback' }, 'web listening');
    base = `http://127.0.0.1:${port}`;
  });
  afterAll(() => service.close());

  /** A client of the web process behind a proxy on loopback that names `address` as the client's. */
  const from = (address: string, creds: Pick<Credentials, 'accessKey' | 'secretKey'>) => {
    const client = createSigningClient({ baseUrl: base, ...creds });
    return (orderId: number) =>
      client.request('GET', `/v1/orders/${orderId}`, undefined, { headers: { 'X-Forwarded-For': address } });
  };

  it('when a stranger elsewhere fails twenty signatures with a client’s key, then the stranger is locked (4292) and the client is not', async () => {
    const victim = await service.client('victim');
    const stranger = from('203.0.113.7', { accessKey: victim.accessKey, secretKey: 'guessed' });
    for (let i = 0; i < 20; i++) expect((await stranger(1)).svcStatus).toEqual([4010, 4017]);
    const locked = await stranger(1);
    expect(locked.status).toBe(429);
    expect(locked.svcStatus).toEqual([4292]);
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(800);
    // The key's owner, from its own address, is served as ever.
    expect((await from('198.51.100.20', victim)(424242)).svcStatus).toEqual([4041]);
    // With the right secret from the stranger's address, the lock still holds.
    expect((await from('203.0.113.7', victim)(424242)).svcStatus).toEqual([4292]);
  });

  it('when the proxy chain holds an address the client forged, then the first address not of a trusted proxy counts', async () => {
    const victim = await service.client('forged-chain victim');
    const forged = { accessKey: victim.accessKey, secretKey: 'guessed' };
    // The stranger at 203.0.113.8 writes the victim's address first; the proxy appends the stranger's own.
    const stranger = from('198.51.100.21, 203.0.113.8', forged);
    for (let i = 0; i < 20; i++) await stranger(1);
    expect((await stranger(1)).svcStatus).toEqual([4292]);
    expect((await from('198.51.100.21', victim)(424242)).svcStatus).toEqual([4041]);
  });

  it('when wrong dashboard passwords come from one address, then that address is refused 429 after ten, and another signs in', async () => {
    const basic = (password: string) => `Basic ${Buffer.from(`ops:${password}`).toString('base64')}`;
    const dashboard = (address: string, password: string) =>
      fetch(`${base}/admin/queues/api/queues`, {
        headers: { Authorization: basic(password), 'X-Forwarded-For': address },
      });
    for (let i = 0; i < 10; i++) expect((await dashboard('203.0.113.9', `guess ${i}`)).status).toBe(401);
    const refused = await dashboard('203.0.113.9', 'correct horse');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(800);
    expect(await refused.text()).not.toContain('orders');
    const operator = await dashboard('198.51.100.22', 'correct horse');
    expect(operator.status).toBe(200);
    expect(await operator.text()).toContain('orders');
  });
});

describe('failed authentications without TRUST_PROXY', () => {
  it('when a stranger sends X-Forwarded-For, then it is not believed: the socket address counts', async () => {
    const service = await createTestService();
    try {
      const victim = await service.client('victim of a forged header');
      const forged = { accessKey: victim.accessKey, secretKey: 'guessed' };
      const headers = (address: string) => ({ headers: { 'X-Forwarded-For': address } });
      for (let i = 0; i < 20; i++)
        await signed(service.app, forged, 'GET', '/v1/orders/1', undefined, headers(`203.0.113.${i}`));
      const res = await signed(
        service.app,
        victim,
        'GET',
        '/v1/orders/1',
        undefined,
        headers('198.51.100.1'),
      );
      expect(res.headers['svc-status']).toBe('4292');
    } finally {
      await service.close();
    }
  });
});
