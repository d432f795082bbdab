import type { App } from '../../src/http/app.js';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebApp } from '../../src/processes/web.process.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, signed, type TestService } from '../helpers/test-service.js';

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('queue dashboard at /admin/queues without ADMIN_USER and ADMIN_PASSWORD', () => {
  let service: TestService;
  beforeAll(async () => (service = await createTestService()));
  afterAll(() => service.close());

  it('is not there: 4042 like any unknown path, whatever credentials are sent', async () => {
    const app = createWebApp(service.deps);
    for (const path of ['/admin/queues', '/admin/queues/api/queues']) {
      const res = await supertest(app).get(path).set('Authorization', basic('admin', ''));
      expect(res.status).toBe(404);
      expect(res.headers['svc-status']).toBe('4042');
    }
  });
});

describe('queue dashboard at /admin/queues with ADMIN_USER and ADMIN_PASSWORD', () => {
  let service: TestService;
  let app: App;
  beforeAll(async () => {
    service = await createTestService({ env: { ADMIN_USER: 'ops', ADMIN_PASSWORD: 'correct horse' } });
    await service.importCatalog(VENDORS, LISTINGS);
    app = createWebApp(service.deps);
  });
  afterAll(() => service.close());

  it('when no or wrong credentials are sent, then it answers 401 with a basic-auth challenge and no page', async () => {
    const attempts = [
      undefined,
      basic('ops', 'wrong'),
      basic('someone', 'correct horse'),
      basic('ops', 'correct horse ') /* one space too many */,
      'Bearer correct horse',
      'Basic !!!not-base64',
    ];
    for (const authorization of attempts) {
      let req = supertest(app).get('/admin/queues/api/queues');
      if (authorization) req = req.set('Authorization', authorization);
      const res = await req;
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Basic realm="queues", charset="UTF-8"');
      expect(res.text).not.toContain('orders');
    }
  });

  it('when the operator signs in, then the board and its API show the orders queue with a waiting job', async () => {
    const buyer = await service.client('dashboard buyer');
    const placed = await signed(app, buyer, 'POST', '/v1/orders', orderBody(buyer.ccToken), {
      headers: { Prefer: 'respond-async' },
    });
    expect(placed.headers['svc-status']).toBe('2010');
    const auth = basic('ops', 'correct horse');

    const page = await supertest(app).get('/admin/queues').set('Authorization', auth);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.text).toContain('"boardTitle":"Book orders"');
    const script = /src="(static\/js\/main\.[^"]+)"/.exec(page.text)?.[1];
    expect(script).toBeDefined();
    expect((await supertest(app).get(`/admin/queues/${script}`)).status).toBe(401);
    expect((await supertest(app).get(`/admin/queues/${script}`).set('Authorization', auth)).status).toBe(200);

    const api = await supertest(app).get('/admin/queues/api/queues').set('Authorization', auth);
    expect(api.status).toBe(200);
    const queue = (api.body.queues as { name: string; counts: Record<string, number> }[]).find(
      (q) => q.name === 'orders',
    );
    expect(queue?.counts.waiting).toBe(1);
  });
});
