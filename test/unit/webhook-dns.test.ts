// Webhook hosts are resolved by c-ares with a time-out per query, not by getaddrinfo on libuv's four threads:
// one endpoint's silent DNS server holds its own deliveries only.
import dgram from 'node:dgram';
import dns from 'node:dns';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dnsResolver, resolveTarget, WebhookTargetError } from '../../src/webhooks/webhook-target.js';

let silent: dgram.Socket;
let server = '';
let queries = 0;

beforeAll(async () => {
  silent = dgram.createSocket('udp4');
  silent.on('message', () => queries++);
  await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
  server = `127.0.0.1:${(silent.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => silent.close(() => resolve())));

describe('the webhook resolver', () => {
  it('when the DNS server never answers, then each lookup gives up by itself and the thread pool stays free', async () => {
    const resolve = dnsResolver({ servers: [server], timeoutMs: 1500, tries: 2 });
    const hanging = Array.from({ length: 8 }, (_, i) =>
      resolveTarget(`slow-${i}.example`, { allowPrivate: false, resolve }).then(
        () => 'resolved',
        (err: unknown) => err,
      ),
    );
    let settled = 0;
    for (const h of hanging) void h.then(() => settled++);
    // Eight lookups in flight on getaddrinfo would hold all four threads: these finish while they wait.
    await Promise.all([
      dns.promises.lookup('localhost'),
      ...Array.from({ length: 8 }, () => fs.promises.readFile(import.meta.filename)),
    ]);
    expect(settled).toBe(0);
    const outcomes = await Promise.all(hanging);
    for (const outcome of outcomes) {
      expect(outcome).toBeInstanceOf(WebhookTargetError);
      expect((outcome as Error).message).toMatch(/^slow-\d\.example does not resolve \(ETIMEOUT\)$/);
    }
    expect(queries).toBeGreaterThanOrEqual(8);
  });

  it('answers localhost with the loopback addresses without asking, which the SSRF check refuses', async () => {
    const resolve = dnsResolver({ servers: [server] });
    const before = queries;
    await expect(resolve('LocalHost.')).resolves.toEqual([
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ]);
    await expect(resolveTarget('api.localhost', { allowPrivate: false, resolve })).rejects.toThrow(
      /api\.localhost resolves to 127\.0\.0\.1, which is a loopback address/,
    );
    expect(queries).toBe(before);
  });
});
