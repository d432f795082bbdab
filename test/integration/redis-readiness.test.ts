// Redis that is up but not (yet, or no longer) answering: a web process that has just started must not serve a
// signed request without its lockout check, and a reconciliation pass that loses Redis half-way ends with a
// warning, leaves everything consistent, and the next pass completes.
import net from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, startPrivateRedis, type RunningRedis } from '../../scripts/redis.js';
import { createSigningClient } from '../helpers/signed-client.js';
import { orderJobId } from '../../src/queue/order.queue.js';
import { runReconcilePass } from '../../src/services/reconcile.js';
import { LISTINGS, orderBody, VENDORS } from '../helpers/fixtures.js';
import { createTestService, signed, type TestService } from '../helpers/test-service.js';
import { logLines, sleep } from '../helpers/wait.js';

let service: TestService | undefined;
let redis: RunningRedis | undefined;
let proxy: net.Server | undefined;

afterEach(async () => {
  await service?.close();
  await redis?.stop();
  proxy?.close();
  service = redis = proxy = undefined;
});

/** A TCP hop to Redis that holds every new connection for `delayMs` before passing bytes on: Redis is up, slowly. */
async function slowConnections(target: string, delayMs: number): Promise<string> {
  const { hostname, port } = new URL(target);
  const server = net.createServer((socket) => {
    socket.pause();
    setTimeout(() => {
      const upstream = net.connect(Number(port), hostname, () => {
        socket.pipe(upstream).pipe(socket);
        socket.resume();
      });
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
    }, delayMs);
  });
  const listenPort = await freePort();
  await new Promise<void>((resolve) => server.listen(listenPort, '127.0.0.1', resolve));
  proxy = server;
  return `redis://127.0.0.1:${listenPort}`;
}

describe('a web process starting while its Redis connection is still being made', () => {
  it('when signed requests arrive from the first moment, then none is served without its lockout check', async () => {
    service = await createTestService();
    const client = await service.client('early caller');
    const port = await freePort();
    const slowRedis = await slowConnections(service.env.REDIS_URL, 1500);
    const web = service.spawn('src/server.ts', {
      PORT: String(port),
      REDIS_URL: slowRedis,
      LOG_LEVEL: 'info',
    });
    const child = await web;
    const lines = logLines(child);
    const caller = createSigningClient({ baseUrl: `http://127.0.0.1:${port}`, ...client });
    const answers: number[][] = [];
    // Knocking from before the process listens until a second after its first answer (its start may be slow).
    let deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const res = await caller.request('GET', '/v1/orders/424242').catch(() => null);
      if (res && answers.push(res.svcStatus) === 1) deadline = Date.now() + 1000;
      if (!res) await sleep(20);
    }
    expect(answers.length).toBeGreaterThan(0);
    expect(new Set(answers.map((codes) => codes.join(',')))).toEqual(new Set(['4041']));
    expect(lines.filter((line) => /lockout check skipped/.test(line.msg))).toEqual([]);
    // Request lines name the full path, not the part a router sees, also when the router answered itself.
    expect((await caller.request('GET', '/v1/orders?limit=1')).svcStatus).toEqual([2000]);
    await sleep(200);
    const paths = new Set(lines.filter((line) => line.msg === 'request').map((line) => line.path));
    expect(paths).toEqual(new Set(['/v1/orders/424242', '/v1/orders']));
  });
});

describe('a reconciliation pass that loses Redis half-way', () => {
  it('when Redis goes while the pass requeues, then the pass ends with a warning and the next one completes', async () => {
    redis = await startPrivateRedis();
    service = await createTestService({ env: { REDIS_URL: redis.url, QUEUED_STALE_AFTER_S: '1' } });
    await service.importCatalog(VENDORS, LISTINGS);
    const buyer = await service.client('patient buyer');
    const body = orderBody(buyer.ccToken);
    const res = await signed(service.app, buyer, 'POST', '/v1/orders', body, {
      headers: { Prefer: 'respond-async' },
    });
    const orderId = res.body.orderId as number;
    await service.deps.queue.queue.remove(orderJobId(orderId));

    const logged: string[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({ write: (chunk, _encoding, done) => done(void logged.push(chunk.toString())) }),
    );
    const running = redis;
    const reconcile = service.deps.store.reconcile;
    // Redis goes away between reading the stale orders and asking the queue about them.
    const losing = {
      ...reconcile,
      staleOrders: async (...args: Parameters<typeof reconcile.staleOrders>) => {
        const rows = await reconcile.staleOrders(...args);
        await running.stop();
        return rows;
      },
    };
    const deps = { ...service.deps, logger, store: { ...service.deps.store, reconcile: losing } };
    const now = Date.now() + 5000;
    expect(await runReconcilePass(deps, { now })).toEqual({ ran: false, reason: 'redis unavailable' });
    const warnings = logged.map((line) => JSON.parse(line) as { level: number; msg: string });
    expect(warnings.filter((line) => line.level >= 50)).toEqual([]);
    expect(warnings.map((line) => line.msg)).toContain('reconcile pass ended early: redis unavailable');
    expect(await service.probe.scalar('SELECT phase FROM orders WHERE order_id = ?', orderId)).toBe('queued');

    redis = await startPrivateRedis(Number(new URL(running.url).port));
    // The service's connections come back by themselves a moment after Redis does, as a clock's would.
    const again = () => runReconcilePass(service!.deps, { now }).catch(() => ({ ran: false }) as const);
    let next = await again();
    for (let i = 0; !next.ran && i < 50; i += 1) {
      await sleep(100);
      next = await again();
    }
    expect(next).toMatchObject({ ran: true, counts: { requeued: 1 } });
    expect(await service.deps.queue.queue.getJob(orderJobId(orderId))).toBeDefined();
  });
});
