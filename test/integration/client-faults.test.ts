// Retries of the client package that never double an order, against the real service: an answer lost because
// the web process was killed while it answered, and a burst of orders past MAX_UNSETTLED_ORDERS.
import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { OrdersClient, type OrderRequest } from '../../client/src/index.js';
import { freePort } from '../../scripts/redis.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, stopChild, type TestService } from '../helpers/test-service.js';
import { sleep, until } from '../helpers/wait.js';

let service: TestService | undefined;
let proxy: Proxy | undefined;
afterEach(async () => {
  await proxy?.close();
  await service?.close();
  proxy = undefined;
  service = undefined;
});

interface Proxy {
  port: number;
  /** Where connections go; while null, new connections wait, paused, for a target. */
  target: number | null;
  close(): Promise<void>;
}

/**
 * A TCP proxy in front of the web process: when the web process dies, the caller's connection is cut as well
 * (its answer lost), and a caller connecting while no web process is up waits for the next one.
 */
async function startProxy(target: number): Promise<Proxy> {
  const waiting: net.Socket[] = [];
  const sockets = new Set<net.Socket>();
  const pipe = (client: net.Socket, port: number) => {
    const upstream = net.connect(port, '127.0.0.1');
    sockets.add(upstream);
    client.pipe(upstream).pipe(client);
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    upstream.on('error', cut).on('close', cut);
    client.on('error', cut).on('close', cut);
    client.resume();
  };
  const state: Proxy = { port: 0, target, close: async () => undefined };
  const server = net.createServer({ pauseOnConnect: true }, (client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    if (state.target === null) waiting.push(client);
    else pipe(client, state.target);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.port = (server.address() as AddressInfo).port;
  return Object.defineProperties(state, {
    target: {
      get: () => target,
      set: (port: number | null) => {
        (target as number | null) = port;
        if (port !== null) for (const client of waiting.splice(0)) pipe(client, port);
      },
    },
    close: {
      value: () => {
        for (const socket of sockets) socket.destroy();
        return new Promise<void>((resolve) => server.close(() => resolve()));
      },
    },
  });
}

async function startWeb(s: TestService): Promise<{ port: number; web: ChildProcess }> {
  const port = await freePort();
  const web = await s.spawn('src/server.ts', { PORT: String(port) }, 'web listening');
  return { port, web };
}

describe('when the web process is killed while it answers an order (the answer is lost)', () => {
  it('then the client sends it again with the same request id: one order, one authorisation', async () => {
    service = await createTestService();
    await service.importCatalog(VENDORS, LISTINGS);
    const buyer = await service.client('lost answer');
    // No worker yet: the web process stores the order, then waits (ORDER_WAIT_MS) for an outcome that does
    // not come; it is killed during that wait.
    const first = await startWeb(service);
    proxy = await startProxy(first.port);
    const sent: string[] = [];
    const client = new OrdersClient({
      baseUrl: `http://127.0.0.1:${proxy.port}`,
      accessKey: buyer.accessKey,
      secretKey: buyer.secretKey,
      // The retry waits in the proxy for the new web process: no attempt of this test is to time out.
      timeoutMs: 600_000,
      fetch: (input, init) => {
        sent.push((init!.headers as Record<string, string>)['svc-requestid']!);
        return globalThis.fetch(input, init);
      },
    });
    const placing = client.placeOrder(orderBody(buyer.ccToken) as OrderRequest, { requestId: 'lost-1' });
    const s = service;
    await until(
      async () => (await s.probe.scalar<number>('SELECT count(*) FROM orders')) === 1,
      30_000,
      'stored',
    );
    proxy.target = null;
    await stopChild(first.web, 'SIGKILL');
    const second = await startWeb(service);
    proxy.target = second.port;
    await service.startWorker();

    const placed = await placing;
    expect(sent).toEqual(['lost-1', 'lost-1']);
    const settled = await client.waitForOrder(placed.orderId);
    expect(settled.listings[0]!.orderItems.map((i) => i.status)).toEqual([5]);
    expect(await service.probe.scalar<number>('SELECT count(*) FROM orders')).toBe(1);
    expect(
      await service.probe.scalar<number>(
        "SELECT count(*) FROM ledger_entries WHERE order_id = ? AND kind = 'authorize'",
        placed.orderId,
      ),
    ).toBe(1);
    expect(await service.probe.scalar<number>('SELECT count(*) FROM payments')).toBe(1);
  });
});

describe('when a burst of orders passes MAX_UNSETTLED_ORDERS', () => {
  it('then every order is accepted once the backlog drains, each once, alone or in batches', async () => {
    const env = { MAX_UNSETTLED_ORDERS: '10', MAX_UNSETTLED_PER_CLIENT: '1000' };
    service = await createTestService({ env });
    await service.importCatalog(
      VENDORS,
      LISTINGS.map((l) => (l.listingId === 2002 ? { ...l, quantity: 10_000 } : l)),
    );
    const buyer = await service.client('bursting buyer');
    const { port } = await startWeb(service);
    // A worker whose payments take a while: the backlog drains at a pace the service measures, and its
    // Retry-After follows that pace (before any order has settled it asks for up to 60 s).
    await service.startWorker({ SANDBOX_PAYMENT_LATENCY_MS: '20' });
    let refused = 0;
    const client = new OrdersClient({
      baseUrl: `http://127.0.0.1:${port}`,
      accessKey: buyer.accessKey,
      secretKey: buyer.secretKey,
      // As many rounds as it takes for the backlog to drain.
      maxRetries: 1_000,
      fetch: async (input, init) => {
        const res = await globalThis.fetch(input, init);
        const text = await res.clone().text();
        if (res.headers.get('svc-status') === '5030' || text.includes('"status":[5030]')) refused += 1;
        return res;
      },
    });
    const order = () => orderBody(buyer.ccToken) as OrderRequest;
    // First a few orders at a time, below the limit, each settled before the next: the service's figure (read
    // every second) sees them settle and learns the pace of the drain, which its Retry-After is based on.
    const warmUp: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 4; i++) warmUp.push((await client.placeOrder(order())).orderId);
      await sleep(1_200);
    }

    // 18 orders at once, past the limit of 10: about 11 are admitted, the others refused for now. Once the
    // worker has settled those (well within any Retry-After), a second round has room for all the rest.
    const entries = Array.from({ length: 12 }, (_, i) => ({ requestId: `burst-${i}`, ...order() }));
    const batches = client.placeOrders(entries, { batchSize: 6 });
    const alone = Array.from({ length: 6 }, (_, i) =>
      client.placeOrder(order(), { requestId: `alone-${i}`, respondAsync: true }),
    );
    const results = await batches;
    const single = await Promise.all(alone);

    expect(results.map((r) => r.svcStatus)).toEqual(entries.map(() => [2010]));
    expect(refused).toBeGreaterThan(0);
    const ids = [...results.map((r) => r.order!.orderId), ...single.map((o) => o.orderId)];
    expect(new Set(ids).size).toBe(18);
    expect(await service.probe.scalar<number>('SELECT count(*) FROM orders')).toBe(18 + warmUp.length);
  }, 300_000);
});
