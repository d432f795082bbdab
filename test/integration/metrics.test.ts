import type { App } from '../../src/http/app.js';
import os from 'node:os';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/redis.js';
import { createMetricsListener, createWebApp } from '../../src/processes/web.process.js';
import { createProcessMetrics } from '../../src/metrics/http.metrics.js';
import { REQUEST_LABELS } from '../../src/http/request-labels.js';
import { publishStoreCounts } from '../../src/metrics/order-store.metrics.js';
import { runReconcilePass } from '../../src/services/reconcile.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { parseSamples, valueOf } from '../helpers/prometheus-text.js';
import { createTestService, signed, stopChild, type TestService } from '../helpers/test-service.js';

let service: TestService;
let app: App;
let metrics: ReturnType<typeof createMetricsListener>;

const scrape = async () => {
  const res = await supertest(metrics).get('/metrics');
  expect(res.status).toBe(200);
  return res.text;
};

beforeAll(async () => {
  service = await createTestService();
  await service.importCatalog(VENDORS, LISTINGS);
  const processMetrics = createProcessMetrics(REQUEST_LABELS);
  app = createWebApp(service.deps, processMetrics);
  metrics = createMetricsListener(service.deps, processMetrics);
});
// What the clock does every STORE_COUNTS_EVERY_S (the last test here sees a real clock do it).
const countStore = () =>
  publishStoreCounts(service.deps.store, service.deps.redis, service.config.REDIS_PREFIX);
afterAll(() => service.close());

describe('GET /metrics after known traffic', () => {
  it('when a client sends dry runs, bad requests and real orders processed by a worker process, then the counts, durations and outcomes add up', async () => {
    const buyer = await service.client('metrics buyer');
    const decliner = await service.client('metrics decliner', true);
    const worker = await service.startWorker();
    for (let i = 0; i < 3; i++)
      await signed(app, buyer, 'POST', '/v1/orders', orderBody(buyer.ccToken, { dryrun: true }));
    await signed(app, buyer, 'GET', '/v1/orders/999999');
    await signed(app, buyer, 'GET', '/v1/orders/999998');
    await supertest(app).get('/v1/orders'); // unsigned
    await supertest(app).get('/healthz');
    const ordered = await signed(
      app,
      buyer,
      'POST',
      '/v1/orders',
      orderBody(buyer.ccToken, { listings: [{ listingId: 2002, quantity: 2 }] }),
    );
    const declined = await signed(app, decliner, 'POST', '/v1/orders', orderBody(decliner.ccToken));
    expect(ordered.body.listings[0].orderItems.map((i: { status: number }) => i.status)).toEqual([5, 5]);
    expect(declined.body.listings[0].orderItems[0].status).toBe(19);

    // Real orders wait for the worker's outcome; the worker publishes its metrics on an interval after it.
    const job = { queue: 'orders', job: 'process-order', result: 'completed' };
    await expect
      .poll(async () => valueOf(await scrape(), 'bookorders_job_duration_seconds_count', job))
      .toBe(2);
    await countStore();
    const text = await scrape();
    const requests = (labels: Record<string, string>) => valueOf(text, 'http_requests_total', labels);
    expect(requests({ method: 'POST', route: '/v1/orders', status_code: '200', svc_status: '2002' })).toBe(3);
    expect(requests({ method: 'POST', route: '/v1/orders', status_code: '200', svc_status: '2010' })).toBe(2);
    expect(requests({ method: 'GET', route: '/v1/orders/:orderId', status_code: '404' })).toBe(2);
    expect(requests({ method: 'GET', route: '/v1/orders', status_code: '401' })).toBe(1);
    expect(requests({ method: 'GET', route: '/healthz', status_code: '200' })).toBe(1);
    const latency = { method: 'POST', route: '/v1/orders', status_code: '200' };
    expect(valueOf(text, 'http_request_duration_seconds_count', latency)).toBe(5);
    expect(valueOf(text, 'http_request_duration_seconds_bucket', { ...latency, le: '+Inf' })).toBe(5);

    expect(valueOf(text, 'bookorders_orders_settled_total', { outcome: 'ordered' })).toBe(1);
    expect(valueOf(text, 'bookorders_orders_settled_total', { outcome: 'declined' })).toBe(1);
    expect(valueOf(text, 'bookorders_order_items_settled_total', { status: '5' })).toBe(2);
    expect(valueOf(text, 'bookorders_order_items_settled_total', { status: '19' })).toBe(1);
    expect(valueOf(text, 'bookorders_job_duration_seconds_count', job)).toBe(2);
    expect(valueOf(text, 'bookorders_job_duration_seconds_bucket', { ...job, le: '+Inf' })).toBe(2);
    expect(valueOf(text, 'bookorders_job_duration_seconds_sum', job)).toBeGreaterThan(0);
    expect(valueOf(text, 'bookorders_order_items', { status: '5', name: 'ORDERED' })).toBe(2);
    expect(valueOf(text, 'bookorders_order_items', { status: '19', name: 'CREDIT_CARD_REJECTED' })).toBe(1);
    expect(valueOf(text, 'process_resident_memory_bytes')).toBeGreaterThan(10_000_000);
    expect(text).toContain('# TYPE nodejs_eventloop_lag_seconds gauge');
    // The worker process's own heartbeat.
    const workerProcess = { role: 'worker', pid: String(worker.pid) };
    expect(valueOf(text, 'bookorders_processes', { role: 'worker' })).toBe(1);
    expect(valueOf(text, 'bookorders_process_resident_memory_bytes', workerProcess)).toBeGreaterThan(
      10_000_000,
    );
    expect(valueOf(text, 'bookorders_process_cpu_seconds_total', workerProcess)).toBeGreaterThan(0);

    // With the worker gone, accepted orders wait in the queue and the store.
    await stopChild(worker);
    for (let i = 0; i < 2; i++)
      await signed(app, buyer, 'POST', '/v1/orders', orderBody(buyer.ccToken), {
        headers: { Prefer: 'respond-async' },
      });
    await countStore();
    const later = await scrape();
    expect(valueOf(later, 'bookorders_queue_jobs', { queue: 'orders', state: 'waiting' })).toBe(2);
    expect(valueOf(later, 'bookorders_queue_jobs', { queue: 'orders', state: 'active' })).toBe(0);
    expect(valueOf(later, 'bookorders_queue_jobs', { queue: 'orders', state: 'failed' })).toBe(0);
    expect(valueOf(later, 'bookorders_queue_jobs', { queue: 'orders', state: 'delayed' })).toBe(0);
    expect(valueOf(later, 'bookorders_orders_unsettled', { phase: 'queued' })).toBe(2);
    expect(valueOf(later, 'bookorders_order_items', { status: '1', name: 'QUEUED' })).toBe(2);
    expect(valueOf(later, 'bookorders_processes', { role: 'worker' })).toBeUndefined();
  });

  it('when reconciliation reports its actions, then they are counted by kind with one pass each', async () => {
    await service.deps.metrics.recordReconcileActions({
      requeued: 2,
      unshipped: 1,
      extraShippingTimedOut: 0,
    });
    await service.deps.metrics.recordReconcileActions({ requeued: 1 });
    // A real pass (nothing stale here) is counted by the service itself.
    expect(await runReconcilePass(service.deps)).toMatchObject({ ran: true });
    const text = await scrape();
    expect(valueOf(text, 'bookorders_reconcile_passes_total')).toBe(3);
    expect(valueOf(text, 'bookorders_reconcile_actions_total', { kind: 'requeued' })).toBe(3);
    expect(valueOf(text, 'bookorders_reconcile_actions_total', { kind: 'unshipped' })).toBe(1);
    expect(
      valueOf(text, 'bookorders_reconcile_actions_total', { kind: 'extraShippingTimedOut' }),
    ).toBeUndefined();
  });

  it('serves the Prometheus text format, every line a valid sample, with its own time in Server-Timing', async () => {
    const res = await supertest(metrics).get('/metrics');
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.headers['server-timing']).toMatch(/^collect;dur=\d+\.\d{2}$/);
    expect(parseSamples(res.text).length).toBeGreaterThan(50);
    const types = [...res.text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]);
    expect(new Set(types).size).toBe(types.length);
  });
});

describe('where /metrics is served', () => {
  it('when a client asks the API for /metrics, then it is 4042 like any unknown path', async () => {
    const res = await supertest(app).get('/metrics');
    expect(res.status).toBe(404);
    expect(res.headers['svc-status']).toBe('4042');
    expect(res.text).not.toContain('http_requests_total');
  });

  it('when a web process runs, then /metrics answers on METRICS_PORT only, on 127.0.0.1, and the API port says 404', async () => {
    const [port, metricsPort] = [await freePort(), await freePort()];
    const web = await service.spawn(
      'src/server.ts',
      { PORT: String(port), METRICS_PORT: String(metricsPort) },
      'web listening',
    );
    const api = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(api.status).toBe(404);
    expect(await api.text()).not.toContain('http_requests_total');
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(await res.text()).toContain('# TYPE http_requests_total counter');
    expect((await fetch(`http://127.0.0.1:${metricsPort}/healthz`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/v1/orders`)).status).toBe(404);
    // Bound to 127.0.0.1 (METRICS_HOST unset): this machine's other addresses, where it has one, are refused.
    const outside = Object.values(os.networkInterfaces())
      .flat()
      .find((address) => address && address.family === 'IPv4' && !address.internal)?.address;
    if (outside) {
      await expect(fetch(`http://${outside}:${metricsPort}/metrics`)).rejects.toThrow();
      expect((await fetch(`http://${outside}:${port}/healthz`)).status).toBe(200);
    }
    await stopChild(web);
  });

  it('when a clock runs, then every web process shows the store counts it published, and their age', async () => {
    const buyer = await service.client('counted buyer');
    for (let i = 0; i < 3; i++)
      await signed(app, buyer, 'POST', '/v1/orders', orderBody(buyer.ccToken), {
        headers: { Prefer: 'respond-async' },
      });
    const queuedItems = Number(
      await service.probe.scalar<number | string>('SELECT count(*) FROM order_items WHERE status = 1'),
    );
    expect(queuedItems).toBeGreaterThanOrEqual(3);
    const clock = await service.spawn('jobs/clock.ts', { STORE_COUNTS_EVERY_S: '1' }, 'clock ready');
    await expect
      .poll(async () => valueOf(await scrape(), 'bookorders_order_items', { status: '1', name: 'QUEUED' }))
      .toBe(queuedItems);
    const text = await scrape();
    expect(valueOf(text, 'bookorders_orders_unsettled', { phase: 'queued' })).toBeGreaterThanOrEqual(3);
    expect(valueOf(text, 'bookorders_store_counts_age_seconds')).toBeGreaterThanOrEqual(0);
    await stopChild(clock);
  });
});

describe('GET /metrics of a web cluster (WEB_CONCURRENCY=2)', () => {
  it('when requests are spread over both web processes, then one scrape of the one metrics port counts them all', async () => {
    const [port, metricsPort] = [await freePort(), await freePort()];
    await service.spawn(
      'src/server.ts',
      { PORT: String(port), METRICS_PORT: String(metricsPort), WEB_CONCURRENCY: '2' },
      'web cluster listening',
    );
    const base = `http://127.0.0.1:${port}`;
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    for (let i = 0; i < 12; i++) {
      // A new connection each time, so the primary hands requests to both workers in turn.
      const res = await fetch(`${base}/healthz`, { headers: { Connection: 'close' } });
      expect(res.status).toBe(200);
    }
    for (let i = 0; i < 6; i++) {
      const text = await (await fetch(metricsUrl, { headers: { Connection: 'close' } })).text();
      expect(valueOf(text, 'http_requests_total', { route: '/healthz' })).toBe(12);
    }
    const text = await (await fetch(metricsUrl)).text();
    expect(valueOf(text, 'nodejs_version_info')).toBe(1);
    expect(valueOf(text, 'bookorders_processes', { role: 'web' })).toBe(2);
    expect((await fetch(`${base}/metrics`)).status).toBe(404);
  });
});

describe('GET /metrics when strangers send requests to paths of their own making', () => {
  it('when 10,000 requests go to distinct unknown and dashboard paths, then the /metrics text stays within 5 % of its size before', async () => {
    const [port, metricsPort] = [await freePort(), await freePort()];
    const env = {
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      ADMIN_USER: 'ops',
      ADMIN_PASSWORD: 'correct horse',
    };
    await service.spawn('src/server.ts', env, 'web listening');
    const base = `http://127.0.0.1:${port}`;
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    const pathOf = (i: number) =>
      [`/admin/queues/${i}-${'a'.repeat(200)}`, `/no/such/${i}`, `/v1/nothing-${i}`, `/V1/orders/${i}/x`][
        i % 4
      ]!;
    const send = async (i: number) => {
      const res = await fetch(`${base}${pathOf(i)}`, { method: i % 8 < 4 ? 'GET' : 'POST' });
      await res.arrayBuffer();
      return res.status;
    };
    const statuses = new Set<number>();
    let next = 0;
    const sendUpTo = (end: number) =>
      Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < end) statuses.add(await send(next++));
        }),
      );
    // Sample values gain digits with any traffic (10,500 requests against 500); what strangers must not grow
    // is the text of the series themselves: names, labels and the lines they take.
    const sizeOf = async () =>
      (await (await fetch(metricsUrl)).text()).replace(/^([^#].*) \S+$/gm, '$1').length;
    // A warm-up: the fixed series of these requests (route 'unmatched', '/admin/queues', '/metrics') and the
    // garbage collector's exist before the size is taken.
    await sendUpTo(500);
    await sizeOf();
    const before = await sizeOf();
    await sendUpTo(10_500);
    expect([...statuses].sort()).toEqual([401, 404]);
    const after = await sizeOf();
    expect(Math.abs(after - before) / before).toBeLessThan(0.05);
    const text = await (await fetch(metricsUrl)).text();
    const routes = new Set(parseSamples(text).flatMap((s) => (s.labels.route ? [s.labels.route] : [])));
    expect([...routes].sort()).toEqual(['/admin/queues', 'unmatched']);
    // 10,000 requests take a minute or more on a loaded two-core machine.
  }, 300_000);
});
