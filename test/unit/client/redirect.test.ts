// The client never follows a redirect: a 3xx would hand the signed headers and the body (with its ccToken) to
// whatever address the answer names, which could replay them to the service within its clock skew.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OrderApiError, OrdersClient } from '../../../client/src/index.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const seenByTarget: Seen[] = [];
let target: http.Server;
let redirector: http.Server;
let status = 307;

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}

let redirectorUrl = '';

beforeAll(async () => {
  target = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      seenByTarget.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json', 'svc-status': '2010' }).end('{"orderId":1}');
    });
  });
  const targetPort = await listen(target);
  redirector = http.createServer((req, res) => {
    req.resume();
    req.on('end', () =>
      res.writeHead(status, { location: `http://127.0.0.1:${targetPort}${req.url}` }).end('moved'),
    );
  });
  redirectorUrl = `http://127.0.0.1:${await listen(redirector)}`;
});

afterAll(async () => {
  await Promise.all([target, redirector].map((s) => new Promise((r) => s.close(r))));
});

const ORDER = {
  shipAddr: { name: 'a', address1: 'b', city: 'c', country: 'USA', zipcode: '1', phone: '2' },
  billAddr: { name: 'a', address1: 'b', city: 'c', country: 'USA', zipcode: '1', phone: '2' },
  ccToken: 'tok_secret_card',
  listings: [{ listingId: 1, quantity: 1 }],
  shippingMode: 'S' as const,
  domain: 'bookmarket.com' as const,
};

describe('OrdersClient and redirects', () => {
  it.each([307, 308, 301, 302, 303])(
    'when the service answers %i, then the call fails and the other address receives nothing',
    async (code) => {
      status = code;
      const client = new OrdersClient({ baseUrl: redirectorUrl, accessKey: 'AK1', secretKey: 'SK1' });
      const error = await client.placeOrder(ORDER).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OrderApiError);
      expect(error).toMatchObject({ httpStatus: code, retryable: false });
      expect((error as OrderApiError).messages[0]).toMatch(
        /^redirected to 'http:\/\/127\.0\.0\.1:\d+\/v1\/orders': not followed/,
      );
      await expect(client.getOrder(5)).rejects.toMatchObject({ httpStatus: code });
      const raw = await client.request('GET', '/v1/orders');
      expect(raw.httpStatus).toBe(code);
      // No signature, no access key, no card token, no body: nothing reached it at all.
      expect(seenByTarget).toEqual([]);
    },
  );
});
