// A caller who hangs up before its request is answered holds nothing: its batch slot comes back even when it
// left during authentication (before the slot was taken), and the callers who stay are all answered.
import crypto from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { sign } from '../../src/auth/signature.js';
import { entry, postBatch } from '../helpers/batches.js';
import { LISTINGS, VENDORS } from '../helpers/fixtures.js';
import { parseAnswer } from '../helpers/raw-http.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { createTestService, type Credentials, type TestService } from '../helpers/test-service.js';
import { sleep } from '../helpers/wait.js';

let redisLink: TcpProxy;
let service: TestService;
let server: http.Server;
let port: number;
let buyer: Credentials;

beforeAll(async () => {
  const redis = new URL(inject('redisUrl'));
  redisLink = await startTcpProxy(redis.hostname, Number(redis.port));
  redis.host = `127.0.0.1:${redisLink.port}`;
  service = await createTestService({
    env: { REDIS_URL: redis.toString(), BATCH_CONCURRENCY_PER_CLIENT: '1' },
  });
  await service.importCatalog(VENDORS, LISTINGS);
  buyer = await service.client('leaving buyer');
  server = http.createServer(service.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as net.AddressInfo).port;
});
afterAll(async () => {
  redisLink?.pass();
  await new Promise((resolve) => server?.close(resolve));
  await service?.close();
  await redisLink?.close();
});

/** A signed batch of one dry run, as raw HTTP/1.1 bytes. */
function batchRequest(creds: Credentials): string {
  const requestId = crypto.randomUUID();
  const date = new Date().toISOString();
  const body = JSON.stringify({ orders: [entry(requestId, creds.ccToken, { dryrun: true })] });
  const signature = sign(creds.secretKey, {
    method: 'POST',
    path: '/v1/order-batches',
    rawQuery: '',
    date,
    requestId,
    body,
  });
  return (
    `POST /v1/order-batches HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nSvc-RequestId: ${requestId}\r\n` +
    `Svc-Access-Key: ${creds.accessKey}\r\nSvc-Date: ${date}\r\nSvc-Signature: ${signature}\r\n` +
    `Connection: close\r\n\r\n${body}`
  );
}

/** Sends a batch and hangs up after `leaveMs`, or (without it) reads the answer's status (0 for none in 30 s). */
function sendBatch(creds: Credentials, leaveMs?: number): Promise<number> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(port, '127.0.0.1', () => socket.write(batchRequest(creds)));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => undefined);
    const giveUp = setTimeout(() => socket.destroy(), leaveMs ?? 30_000);
    socket.once('close', () => {
      clearTimeout(giveUp);
      resolve(parseAnswer(Buffer.concat(chunks).toString('latin1')).status);
    });
  });
}

describe('a caller who hangs up during authentication', () => {
  it("gets its batch slot back: the client's later batches are accepted", async () => {
    // The buyer's first requests: authentication asks Redis whether the key is locked out from this address, and
    // each Redis reply now takes 0.6 s there and back: the callers leave before it ends.
    redisLink.slow(300);
    const left = await Promise.all([1, 2, 3].map(() => sendBatch(buyer, 150)));
    expect(left).toEqual([0, 0, 0]);
    // Their requests go on past authentication after they left (each slot, if taken, would be taken then).
    await sleep(2000);
    redisLink.pass();

    for (let i = 0; i < 3; i++) {
      const res = await postBatch(service, buyer, [
        entry(crypto.randomUUID(), buyer.ccToken, { dryrun: true }),
      ]);
      expect(res.status, `batch ${i + 1} after the callers left`).toBe(200);
    }
  });

  it('under load, answers every caller who stays, whoever leaves', async () => {
    const others = await Promise.all([1, 2, 3, 4].map((i) => service.client(`stayer ${i}`)));
    // Authentication takes at least 0.6 s now: every leaver leaves during it.
    redisLink.slow(300);
    const leavers = Array.from({ length: 12 }, (_, i) => sendBatch(others[i % 4]!, 50 + (i % 3) * 50));
    const stayers = Array.from({ length: 16 }, (_, i) => sendBatch(others[i % 4]!));
    const answered = await Promise.all(stayers);
    await Promise.all(leavers);
    redisLink.pass();

    // One slot per client: a stayer is either served (200) or told to retry (429), never left unanswered.
    expect(answered.filter((status) => status !== 200 && status !== 429)).toEqual([]);
    expect(answered).toContain(200);
    // And afterwards every client has its slot: one batch each, all at once, is accepted.
    const after = await Promise.all(others.map((creds) => sendBatch(creds)));
    expect(after).toEqual([200, 200, 200, 200]);
  });
});
