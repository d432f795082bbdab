import http from 'node:http';
import type { AddressInfo } from 'node:net';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer } from '../../src/http/http-server.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { signedHeaders } from '../helpers/signed-client.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';

// The signed paths are answered by their own small router (src/http/signed-routes.ts), not Express's: what a
// client sees of paths, methods and bodies must be what Express's router and body parser gave.
let service: TestService;
let buyer: Credentials;
let server: http.Server;
let port: number;

beforeAll(async () => {
  service = await createTestService();
  await service.importCatalog(VENDORS, LISTINGS);
  buyer = await service.client('router tester');
  server = http.createServer(service.app).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await service.close();
});

async function placedOrderId(): Promise<number> {
  const placed = await signed(service.app, buyer, 'POST', '/v1/orders', orderBody(buyer.ccToken), {
    headers: { Prefer: 'respond-async' },
  });
  expect(placed.headers['svc-status']).toBe('2010');
  return placed.body.orderId as number;
}

describe('the signed routes', () => {
  it('answers HEAD of an order with the headers of its GET and no body', async () => {
    const orderId = await placedOrderId();
    const path = `/v1/orders/${orderId}`;
    const got = await signed(service.app, buyer, 'GET', path);
    const head = await supertest(service.app)
      .head(path)
      .set(signedHeaders(buyer, 'HEAD', path, undefined));
    expect(head.status).toBe(200);
    expect(head.headers['svc-status']).toBe('2000');
    expect(head.headers['content-length']).toBe(got.headers['content-length']);
    expect(head.text ?? '').toBe('');
    const absent = await supertest(service.app)
      .head('/v1/orders/99999999')
      .set(signedHeaders(buyer, 'HEAD', '/v1/orders/99999999', undefined));
    expect(absent.status).toBe(404);
    expect(absent.headers['svc-status']).toBe('4041');
  });

  it('reads an order id with a trailing slash or percent-encoded digits as the same order', async () => {
    const orderId = await placedOrderId();
    const plain = await signed(service.app, buyer, 'GET', `/v1/orders/${orderId}`);
    const slash = await signed(service.app, buyer, 'GET', `/v1/orders/${orderId}/`);
    const encoded = `/v1/orders/${[...String(orderId)].map((d) => `%3${d}`).join('')}`;
    const escaped = await signed(service.app, buyer, 'GET', encoded);
    expect(slash.body).toEqual(plain.body);
    expect(escaped.body).toEqual(plain.body);
    const broken = await signed(service.app, buyer, 'GET', '/v1/orders/%E0%A4%A');
    expect(broken.status).toBe(404);
    expect(broken.headers['svc-status']).toBe('4041');
  });

  it('refuses a chunked body over 1 MiB with 4130 once the whole body has come', async () => {
    const body = JSON.stringify({ pad: 'x'.repeat(1024 * 1024 + 10) });
    const answer = await new Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }>(
      (resolve, reject) => {
        const req = http.request(
          {
            port,
            host: '127.0.0.1',
            method: 'POST',
            path: '/v1/orders',
            headers: signedHeaders(buyer, 'POST', '/v1/orders', body),
          },
          (res) => {
            let text = '';
            res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
          },
        );
        req.on('error', reject);
        // No Content-Length: Node sends the body chunked, in pieces.
        for (let at = 0; at < body.length; at += 64 * 1024) req.write(body.slice(at, at + 64 * 1024));
        req.end();
      },
    );
    expect(answer.status).toBe(413);
    expect(answer.headers['svc-status']).toBe('4130');
    expect(JSON.parse(answer.text).messages).toEqual(['body: larger than 1 MiB']);
  });

  it('answers a wrong method on a signed path 4050 with Allow, before asking for a signature', async () => {
    const put = await supertest(service.app).put('/v1/order-batches').send('{}');
    expect(put.status).toBe(405);
    expect(put.headers['svc-status']).toBe('4050');
    expect(put.headers.allow).toBe('POST');
  });

  it("answers on the web's own server, whose requests and responses are born Express's, as on any other", async () => {
    const web = createHttpServer(service.app, service.config, service.deps.logger).listen(0, '127.0.0.1');
    await new Promise((resolve) => web.once('listening', resolve));
    try {
      const base = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
      const orderId = await placedOrderId();
      const path = `/v1/orders/${orderId}`;
      const got = await supertest(base)
        .get(path)
        .set(signedHeaders(buyer, 'GET', path, undefined));
      expect(got.headers['svc-status']).toBe('2000');
      expect(got.body.orderId).toBe(orderId);
      // Express's own paths, and its 404, on the same requests.
      expect((await supertest(base).get('/healthz')).body).toEqual({ status: 'ok' });
      const none = await supertest(base).get('/v2/nothing');
      expect(none.status).toBe(404);
      expect(none.headers['svc-status']).toBe('4042');
      const wrong = await supertest(base).put('/v1/order-batches').send('{}');
      expect(wrong.headers['svc-status']).toBe('4050');
    } finally {
      await new Promise((resolve) => web.close(resolve));
    }
  });
});
