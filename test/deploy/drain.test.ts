// A web told to stop drains first (docs/operating.md, Deploying a release): from SIGTERM on, /readyz answers 503 and
// every answer closes its connection, while requests are served as before for SHUTDOWN_DRAIN_MS; only then does
// it stop listening, and it exits 0. And what /readyz tells: to anyone, ready or not; to the operators, on the
// metrics port, which server each link is on.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/redis.js';
import { REQUESTS_WAIT_MS } from '../../src/bounded-stop.js';
import { LISTINGS, orderBody, VENDORS } from '../helpers/fixtures.js';
import { createSigningClient } from '../helpers/signed-client.js';
import { createTestService, stopChild, type TestService } from '../helpers/test-service.js';
import { sleep, until } from '../helpers/wait.js';

let service: TestService;

beforeAll(async () => {
  service = await createTestService();
  await service.importCatalog(VENDORS, LISTINGS);
});
afterAll(() => service.close());

/** One GET on a kept-alive connection of `agent`: its status, its Connection header and its body. */
function get(agent: http.Agent, port: number, path: string) {
  return new Promise<{ status: number; connection?: string; body: string }>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }));
      })
      .on('error', reject);
  });
}

const exited = (child: import('node:child_process').ChildProcess) =>
  new Promise<number | null>((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code)),
  );

describe('SIGTERM to a web behind a balancer', () => {
  it('then /readyz is 503 at once, answers close their connections, it serves through the drain, then stops listening and exits 0', async () => {
    const port = await freePort();
    const metricsPort = await freePort();
    const drainMs = 4000;
    const web = await service.spawn(
      'src/server.ts',
      { PORT: String(port), METRICS_PORT: String(metricsPort), SHUTDOWN_DRAIN_MS: String(drainMs) },
      'web listening',
    );
    const buyer = await service.client('drain buyer');
    const client = createSigningClient({ baseUrl: `http://127.0.0.1:${port}`, ...buyer });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

    const before = await get(agent, port, '/readyz');
    expect(before).toMatchObject({ status: 200, connection: 'keep-alive' });
    expect(JSON.parse(before.body)).toEqual({ status: 'ready' });

    const stopping = Date.now();
    web.kill('SIGTERM');
    // The next answer on the kept-alive connection already says draining, and closes it.
    let draining = await get(agent, port, '/readyz');
    for (let i = 0; i < 50 && draining.status === 200; i += 1) {
      await sleep(20);
      draining = await get(agent, port, '/readyz');
    }
    expect(draining).toMatchObject({ status: 503, connection: 'close' });
    expect(JSON.parse(draining.body)).toEqual({ status: 'draining' });
    // Served as before meanwhile: a signed get and a dry run, each on a new connection.
    const search = await client.searchOrders({ limit: 1 });
    expect(search.status).toBe(200);
    expect(search.headers.connection).toBe('close');
    const operators = await fetch(`http://127.0.0.1:${metricsPort}/readyz`);
    expect(operators.status).toBe(503);
    expect(await operators.json()).toMatchObject({ status: 'draining' });
    expect(Date.now() - stopping).toBeLessThan(drainMs);

    expect(await exited(web)).toBe(0);
    // It listened for the whole drain (a machine however busy cannot make it shorter).
    expect(Date.now() - stopping).toBeGreaterThanOrEqual(drainMs);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
    agent.destroy();
  });
});

describe('SIGTERM to a web with a request that outlasts its stop', () => {
  it('then that connection is closed once requests had their time, and the process still exits 0 within its grace', async () => {
    const port = await freePort();
    // No worker: a synchronous order waits its whole ORDER_WAIT_MS, longer than a stop gives requests in flight.
    const web = await service.spawn(
      'src/server.ts',
      { PORT: String(port), ORDER_WAIT_MS: '60000', SHUTDOWN_DRAIN_MS: '0' },
      'web listening',
    );
    const buyer = await service.client('hard stop buyer');
    const client = createSigningClient({ baseUrl: `http://127.0.0.1:${port}`, ...buyer });
    const orders = () => service.probe.scalar('SELECT count(*) FROM orders');
    const before = await orders();
    const answer = client.request('POST', '/v1/orders', orderBody(buyer.ccToken)).then(
      () => 'answered',
      () => 'closed',
    );
    await until(async () => (await orders()) === before + 1, 20_000, 'the order accepted');

    const stopping = Date.now();
    web.kill('SIGTERM');
    expect(await answer).toBe('closed');
    expect(await exited(web)).toBe(0);
    const took = Date.now() - stopping;
    expect(took).toBeGreaterThanOrEqual(REQUESTS_WAIT_MS);
    // The shutdown grace of every process (src/processes/run-process.ts): past it, the process exits 1.
    expect(took).toBeLessThan(30_000);
  });
});

describe('GET /readyz', () => {
  it('tells an anonymous caller ready or not and no server address; the metrics port tells the operator where each link is', async () => {
    const port = await freePort();
    const metricsPort = await freePort();
    const web = await service.spawn(
      'src/server.ts',
      { PORT: String(port), METRICS_PORT: String(metricsPort) },
      'web listening',
    );
    try {
      const anonymous = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(await anonymous.json()).toEqual({ status: 'ready' });
      const operators = await fetch(`http://127.0.0.1:${metricsPort}/readyz`);
      expect(operators.status).toBe(200);
      const detail = (await operators.json()) as {
        status: string;
        servers: Record<string, { server: string }>;
      };
      expect(detail.status).toBe('ready');
      const redisPort = new URL(service.env.REDIS_URL).port;
      expect(detail.servers.redis?.server).toContain(`:${redisPort}`);
    } finally {
      await stopChild(web);
    }
  });
});
