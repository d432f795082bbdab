// The moment a restart used to end the web in: a server that ends the session (57P01, as pg_terminate_backend or
// a fast shutdown does) in the same read as the ReadyForQuery that ends connecting. node-postgres emits 'error'
// before the pool has called back, so before the pool listens: the adapter's client listens from its construction.
// A stand-in server on loopback writes exactly those bytes.
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createPool } from '../../src/store/postgres/postgres.pool.js';
import { isStoreUnavailable } from '../../src/store/store-errors.js';

/** One backend message: its type byte, its length, its body. */
function message(type: string, body: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeInt32BE(body.length + 4);
  return Buffer.concat([Buffer.from(type), length, body]);
}

const int32s = (...values: number[]) => {
  const out = Buffer.alloc(4 * values.length);
  values.forEach((v, i) => out.writeInt32BE(v, 4 * i));
  return out;
};

const fields = (pairs: [string, string][]) =>
  Buffer.concat([...pairs.map(([code, text]) => Buffer.from(`${code}${text}\0`)), Buffer.from('\0')]);

/** Connecting answered, and the session ended, in one write. */
const CONNECTED_THEN_TERMINATED = Buffer.concat([
  message('R', int32s(0)),
  message('K', int32s(4242, 1234)),
  message('Z', Buffer.from('I')),
  message(
    'E',
    fields([
      ['S', 'FATAL'],
      ['V', 'FATAL'],
      ['C', '57P01'],
      ['M', 'terminating connection due to administrator command'],
    ]),
  ),
]);

const servers: net.Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

async function terminatingServer(): Promise<number> {
  const server = net.createServer((socket) => {
    socket.on('error', () => undefined);
    socket.once('data', () => socket.end(CONNECTED_THEN_TERMINATED));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

describe('a session ended in the same read as its connecting (PostgreSQL)', () => {
  it.each([
    ['one host', (port: number) => `postgres://u@127.0.0.1:${port}/db`],
    ['two hosts', (port: number) => `postgres://u@127.0.0.1:${port},127.0.0.1:${port}/db`],
  ])('fails the statement as unavailable and ends nothing else (%s)', async (_, url) => {
    const pool = createPool(url(await terminatingServer()), { poolSize: 1 });
    try {
      for (let i = 0; i < 5; i++) {
        const err: unknown = await pool.query('SELECT 1').catch((e: unknown) => e);
        expect(isStoreUnavailable(err), String(err)).toBe(true);
      }
    } finally {
      await pool.end();
    }
  });
});
