// The metrics listener's connections are bounded: a dribbling client is cut, connections are capped, and idle
// ones cannot keep a scraper out. Real sockets on the real server options; the listener is a stand-in.
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetricsServer, METRICS_MAX_CONNECTIONS } from '../../src/http/http-server.js';
import { rawRequest } from '../helpers/raw-http.js';

let server: ReturnType<typeof createMetricsServer>;
let port: number;
const held: net.Socket[] = [];

beforeAll(async () => {
  server = createMetricsServer((_req, res) => res.writeHead(200, { 'Content-Length': '5' }).end('up 1\n'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  for (const socket of held) socket.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const scrape = () => rawRequest(port, 'GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');

/** A connection that has sent `bytes` and is then left open; resolves once connected. */
function hold(bytes = ''): Promise<net.Socket> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      if (bytes) socket.write(bytes);
      resolve(socket);
    });
    socket.on('error', () => undefined);
    // Read (and drop) what comes, so that the server's close is seen.
    socket.resume();
    held.push(socket);
  });
}

const closed = (socket: net.Socket) => socket.destroyed || socket.readyState === 'closed';

describe('the metrics listener', () => {
  it('when a client dribbles its headers a byte a second, then it is cut within 15 s', async () => {
    const answer = await rawRequest(port, 'GET /metrics HTTP/1.1\r\nHo', {
      dribble: { bytes: 'st: x\r\nX-Slow: '.padEnd(60, 'a'), everyMs: 1000 },
      waitMs: 30_000,
    });
    expect(answer.closed).toBe(true);
    expect(answer.ms).toBeLessThan(15_000);
  });

  it.each([
    ['idle', ''],
    ['sending their headers slowly', 'GET /metrics HTTP/1.1\r\nHost: x\r\n'],
  ])(
    'when the cap of connections is held by clients %s, then one past it is dropped and a scrape gets in',
    async (_, sent) => {
      const holders = await Promise.all(Array.from({ length: METRICS_MAX_CONNECTIONS }, () => hold(sent)));
      const dropped = await rawRequest(port, 'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n', { waitMs: 5_000 });
      expect(dropped).toMatchObject({ status: 0, closed: true });
      // Closed at once to make room, well before their keep-alive or headers time-out.
      await expect.poll(() => holders.filter(closed).length, { timeout: 4_000 }).toBe(holders.length);
      // The server counts a connection until its side has closed too: the next scrape, or the one after, gets in.
      await expect.poll(scrape, { timeout: 10_000 }).toMatchObject({ status: 200, body: 'up 1\n' });
    },
  );
});
