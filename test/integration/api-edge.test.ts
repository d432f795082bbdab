import crypto from 'node:crypto';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LISTINGS, US_ADDRESS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';

let service: TestService;
let buyer: Credentials;

beforeAll(async () => {
  service = await createTestService();
  await service.importCatalog(VENDORS, LISTINGS);
  buyer = await service.client('edge tester');
});
afterAll(() => service.close());

const post = (body: unknown, options = {}) => signed(service.app, buyer, 'POST', '/v1/orders', body, options);
const dry = (overrides: Record<string, unknown> = {}) =>
  orderBody(buyer.ccToken, { dryrun: true, ...overrides });

function expectFailure(res: supertest.Response, http: number, codes: string) {
  expect(res.status).toBe(http);
  expect(res.headers['svc-status']).toBe(codes);
  expect(res.body.messages.length).toBeGreaterThan(0);
  expect(res.body.messages.every((m: unknown) => typeof m === 'string' && m.length > 0)).toBe(true);
}

describe('authentication', () => {
  it('when every header is missing, then 4010 with each missing header named', async () => {
    const res = await supertest(service.app).get('/v1/orders');
    expectFailure(res, 401, '4010, 4011, 4014, 4016, 4018');
    expect(res.body.requestId).toBe('');
    expect(res.body.messages).toEqual(expect.arrayContaining([expect.stringMatching(/^Svc-Date: /)]));
  });

  it('when the date is unparsable or too far from the server clock, then 4012 or 4013', async () => {
    expectFailure(
      await signed(service.app, buyer, 'GET', '/v1/orders', undefined, { date: 'yesterday' }),
      401,
      '4010, 4012',
    );
    const old = new Date(Date.now() - 301_000).toISOString();
    expectFailure(
      await signed(service.app, buyer, 'GET', '/v1/orders', undefined, { date: old }),
      401,
      '4010, 4013',
    );
  });

  it('when the request id is longer than 36 characters, then 4220 echoing it', async () => {
    const requestId = 'x'.repeat(37);
    const res = await signed(service.app, buyer, 'GET', '/v1/orders', undefined, { requestId });
    expectFailure(res, 422, '4220');
    expect(res.body.requestId).toBe(requestId);
    expect(res.headers['svc-requestid']).toBe(requestId);
  });

  it('when the key is unknown or disabled, then 4014 or 4015', async () => {
    const stranger = { accessKey: 'AKnobody', secretKey: 'x' };
    expectFailure(await signed(service.app, stranger, 'GET', '/v1/orders'), 401, '4010, 4014');
    const huge = { accessKey: `AK${'f'.repeat(8000)}`, secretKey: 'x' };
    expectFailure(await signed(service.app, huge, 'GET', '/v1/orders'), 401, '4010, 4014');
    const leaver = await service.client('leaver');
    await service.deps.store.clients.disable(leaver.accessKey);
    expectFailure(await signed(service.app, leaver, 'GET', '/v1/orders'), 401, '4010, 4015');
  });

  it('when the body was changed after signing, then 4017', async () => {
    const requestId = crypto.randomUUID();
    const date = new Date().toISOString();
    const good = signed(service.app, buyer, 'POST', '/v1/orders', dry(), { requestId, date });
    const signature = (good as unknown as { header: Record<string, string> }).header['Svc-Signature']!;
    const res = await supertest(service.app)
      .post('/v1/orders')
      .set({
        'Svc-RequestId': requestId,
        'Svc-Access-Key': buyer.accessKey,
        'Svc-Date': date,
        'Svc-Signature': signature,
      })
      .set('Content-Type', 'application/json')
      .send(JSON.stringify(dry({ listings: [{ listingId: 2002, quantity: 9 }] })));
    expectFailure(res, 401, '4010, 4017');
  });

  it('when twenty signatures fail within five minutes, then the key is locked with 4292 even for good requests', async () => {
    const victim = await service.client('victim');
    const forged = { accessKey: victim.accessKey, secretKey: 'guessed' };
    for (let i = 0; i < 20; i++) {
      expectFailure(await signed(service.app, forged, 'GET', '/v1/orders'), 401, '4010, 4017');
    }
    const res = await signed(service.app, victim, 'GET', '/v1/orders');
    expectFailure(res, 429, '4292');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(800);
  });
});

describe('routing and transport', () => {
  it('answers an unknown path 4042, a wrong method 4050 with Allow, and an Accept without JSON 4060', async () => {
    expectFailure(await supertest(service.app).get('/v1/books'), 404, '4042');
    expectFailure(await supertest(service.app).get('/nowhere'), 404, '4042');
    const del = await supertest(service.app).delete('/v1/orders/1');
    expectFailure(del, 405, '4050');
    expect(del.headers.allow).toBe('GET, HEAD');
    expectFailure(await supertest(service.app).get('/v1/orders').set('Accept', 'text/html'), 406, '4060');
  });

  it('refuses a body over 1 MiB with 4130 and a non-JSON media type with 4150', async () => {
    const huge = JSON.stringify({ pad: 'x'.repeat(1024 * 1024) });
    expectFailure(await post(huge), 413, '4130');
    expectFailure(await post(JSON.stringify(dry()), { contentType: 'text/plain' }), 415, '4150');
  });

  it('refuses broken JSON with 4003 and a non-object root with 4000', async () => {
    expectFailure(await post('{"shipAddr": '), 400, '4003');
    expectFailure(await post('[1, 2]'), 400, '4000');
    expectFailure(await post('"order"'), 400, '4000');
  });

  it('serves health, readiness and the OpenAPI document without signing', async () => {
    expect((await supertest(service.app).get('/healthz')).status).toBe(200);
    const ready = await supertest(service.app).get('/readyz');
    // Unsigned: ready or not, never where the store or Redis are (that is on the metrics port).
    expect(ready.body).toEqual({ status: 'ready' });
    const doc = await supertest(service.app).get('/v1/openapi.json');
    expect(doc.body.openapi).toBe('3.1.0');
    expect(doc.body.components.schemas.OrderRequest.required).toEqual(
      expect.arrayContaining(['shipAddr', 'billAddr', 'ccToken', 'listings', 'shippingMode', 'domain']),
    );
    expect(doc.body.components.schemas.OrderRequest.properties.domain.enum).toHaveLength(7);
    const searchParams = doc.body.paths['/orders'].get.parameters.map((p: { name: string }) => p.name);
    expect(searchParams).toEqual(
      expect.arrayContaining(['dateStart', 'orderId', 'orderItemId', 'limit', 'next']),
    );
  });
});

describe('order validation', () => {
  it('reports every field problem at once, one message per problem naming the field', async () => {
    const res = await post({
      shipAddr: { ...US_ADDRESS, country: 'XYZ', zipcode: '' },
      billAddr: { ...US_ADDRESS, provstate: 'california' },
      ccToken: buyer.ccToken,
      listings: [
        { listingId: 2002, quantity: 1.5 },
        { listingId: 424242, quantity: 1, maxPrice: 1.999 },
      ],
      shippingMode: 'X',
      domain: 'bookmarket.es',
      referenceId: 'has space',
      colour: 'blue',
      dryrun: true,
    });
    expectFailure(res, 422, '4220');
    expect(res.body.messages).toEqual(
      expect.arrayContaining([
        'shipAddr.country: must be an ISO 3166-1 alpha-3 country code',
        'shipAddr.zipcode: must be at least 1 characters',
        'billAddr.provstate: must be a 2- or 3-character ISO 3166-2 subdivision code',
        'listings[0].quantity: must be an integer',
        'listings[1].maxPrice: must be a positive amount with at most two decimals',
        'listings[1].listingId: listing 424242 does not exist',
        expect.stringMatching(/^shippingMode: must be one of "S", "P"/),
        expect.stringMatching(/^domain: must be one of /),
        'referenceId: must be 1 to 64 letters, digits, - or _',
        "unknown field 'colour'",
      ]),
    );
    expect(res.body.messages).toHaveLength(10);
  });

  it('names a missing field and a listing given twice', async () => {
    const { domain: _domain, ...noDomain } = dry({
      listings: [
        { listingId: 2002, quantity: 1 },
        { listingId: 2002, quantity: 2 },
      ],
    });
    const res = await post(noDomain);
    expectFailure(res, 422, '4220');
    expect(res.body.messages).toEqual([
      'listings[1].listingId: listing 2002 appears more than once',
      'domain: is required',
    ]);
  });

  it('answers 4002 for no listings, a quantity below one, or more than 250 items', async () => {
    expectFailure(await post(dry({ listings: [] })), 400, '4002');
    expectFailure(await post(dry({ listings: [{ listingId: 2002, quantity: 0 }] })), 400, '4002');
    const many = await post(
      dry({
        listings: [
          { listingId: 2002, quantity: 200 },
          { listingId: 1002, quantity: 51 },
        ],
      }),
    );
    expectFailure(many, 400, '4002');
    expect(many.body.messages).toEqual(['listings: must have at most 250 items in all']);
    const mixed = await post(dry({ listings: [{ listingId: 2002, quantity: 0 }], shippingMode: 'Z' }));
    expectFailure(mixed, 400, '4002, 4220');
  });

  it("answers 4001 for another client's card and locks ordering with 4293 after ten bad tokens", async () => {
    const tester = await service.client('card tester');
    const other = await service.client('card owner');
    const res = await signed(
      service.app,
      tester,
      'POST',
      '/v1/orders',
      orderBody(other.ccToken, { dryrun: true }),
    );
    expectFailure(res, 400, '4001');
    for (let i = 1; i < 10; i++) {
      await signed(service.app, tester, 'POST', '/v1/orders', orderBody(`cc_guess_${i}`, { dryrun: true }));
    }
    const locked = await signed(
      service.app,
      tester,
      'POST',
      '/v1/orders',
      orderBody(tester.ccToken, { dryrun: true }),
    );
    expectFailure(locked, 429, '4293');
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(1700);
  });
});

describe('internal failures', () => {
  it('when the store fails unexpectedly, then 5000 without internals and the request id echoed', async () => {
    const broken = await createTestService();
    const client = await broken.client('unlucky');
    // Renaming fails the store's next read of cards like dropping it, and needs no CASCADE on PostgreSQL.
    await broken.probe.exec('ALTER TABLE cards RENAME TO cards_gone');
    const res = await signed(
      broken.app,
      client,
      'POST',
      '/v1/orders',
      orderBody(client.ccToken, { dryrun: true }),
      {
        requestId: 'req-5000',
      },
    );
    expectFailure(res, 500, '5000');
    expect(res.body).toEqual({ requestId: 'req-5000', messages: [expect.stringMatching(/^internal error/)] });
    await broken.close();
  });
});
