import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LISTINGS, US_ADDRESS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';

// Text that one store cannot hold (U+0000, an unpaired surrogate: PostgreSQL refuses both in jsonb) is refused
// at the edge on both stores alike, and a client sending it never fails another client's orders.
let service: TestService;
let alice: Credentials;
let mallory: Credentials;

const REFUSED = 'must not hold U+0000 or an unpaired UTF-16 surrogate';
const POISONS = ['Eve\u0000', 'Eve\ud800', 'Eve\udc00x'];

const ordersOf = (clientId: number) =>
  service.probe.scalar<number>('SELECT COUNT(*) AS n FROM orders WHERE client_id = ?', clientId);

beforeAll(async () => {
  service = await createTestService();
  await service.importCatalog(VENDORS, LISTINGS);
  alice = await service.client('alice');
  mallory = await service.client('mallory');
  await service.startWorker();
});
afterAll(() => service.close());

describe('text a store cannot hold', () => {
  it("when B sends poisoned real orders while A orders, then A's orders are all 2010 and B's all 4220", async () => {
    const fromAlice = Array.from({ length: 16 }, (_, i) =>
      signed(service.app, alice, 'POST', '/v1/orders', orderBody(alice.ccToken, { referenceId: `a-${i}` })),
    );
    const fromMallory = Array.from({ length: 16 }, (_, i) =>
      signed(
        service.app,
        mallory,
        'POST',
        '/v1/orders',
        orderBody(mallory.ccToken, { shipAddr: { ...US_ADDRESS, name: POISONS[i % POISONS.length]! } }),
      ),
    );
    const [a, b] = await Promise.all([Promise.all(fromAlice), Promise.all(fromMallory)]);
    expect(a.map((res) => res.headers['svc-status'])).toEqual(Array(16).fill('2010'));
    for (const res of b) {
      expect(res.status).toBe(422);
      expect(res.headers['svc-status']).toBe('4220');
      expect(res.body.messages).toEqual([`shipAddr.name: ${REFUSED}`]);
    }
    expect(Number(await ordersOf(mallory.clientId))).toBe(0);
  });

  it('when a dry run, a field of any kind or a batch entry holds it, then that request or entry alone is 4220', async () => {
    const dryRun = await signed(
      service.app,
      mallory,
      'POST',
      '/v1/orders',
      orderBody(mallory.ccToken, {
        dryrun: true,
        billAddr: { ...US_ADDRESS, city: 'x\u0000' },
        ccToken: 'a\ud800',
      }),
    );
    expect(dryRun.headers['svc-status']).toBe('4220');
    expect(dryRun.body.messages).toEqual(
      expect.arrayContaining([`billAddr.city: ${REFUSED}`, `ccToken: ${REFUSED}`]),
    );

    const batch = await signed(service.app, mallory, 'POST', '/v1/order-batches', {
      orders: [
        { requestId: 'fine', ...orderBody(mallory.ccToken, { dryrun: true }) },
        { requestId: 'bad\u0000', ...orderBody(mallory.ccToken, { dryrun: true }) },
        {
          requestId: 'worse',
          ...orderBody(mallory.ccToken, { shipAddr: { ...US_ADDRESS, phone: '\udfff' } }),
        },
      ],
    });
    expect(batch.headers['svc-status']).toBe('2004');
    const [fine, bad, worse] = batch.body.results;
    expect(fine.status).toEqual([2002]);
    expect(bad).toMatchObject({ status: [4220], messages: [`requestId: ${REFUSED}`] });
    expect(worse).toMatchObject({ status: [4220], messages: [`shipAddr.phone: ${REFUSED}`] });
    expect(Number(await ordersOf(mallory.clientId))).toBe(0);
  });

  it('when a search parameter holds U+0000, then it is 4220 naming the parameter', async () => {
    const res = await signed(service.app, mallory, 'GET', '/v1/orders?referenceId=a%00b');
    expect(res.headers['svc-status']).toBe('4220');
    expect(res.body.messages).toContain(`referenceId: ${REFUSED}`);
  });
});

describe('messages about a broken body', () => {
  it('when an unquoted ccToken breaks the JSON, then the 4003 message quotes no part of it', async () => {
    const token = 'c0ffee1234567deadbeef';
    for (const raw of [`{"ccToken": ${token}}`, `{"ccToken": "x", "a": ${token}`, `{"ccToken": "${token}`]) {
      const res = await signed(service.app, alice, 'POST', '/v1/orders', raw);
      expect(res.headers['svc-status']).toBe('4003');
      expect(res.body.messages[0]).toMatch(/^body: not valid JSON/);
      expect(JSON.stringify(res.body)).not.toMatch(/c0ffee|1234567|deadbeef/);
    }
  });
});
