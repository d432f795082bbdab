// OpenTelemetry traces across processes (docs/api.md#operations): a web and a worker process export to an
// OTLP/HTTP receiver of the test's own; a real order is one trace, from the web's request through the job to the
// worker's settlement, its spans carrying `order.id`, and the webhook delivery of its change continues it.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/redis.js';
import { addWebhook } from '../../src/services/webhooks.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { createTestService, signed, type TestService } from '../helpers/test-service.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const WALDEN = 2002;
const SERVER = 2; // SpanKind.SERVER in OTLP's numbering (1 internal, 2 server, 3 client, 4 producer, 5 consumer)

let service: TestService;
let otlp: OtlpReceiver;
let hooks: Receiver;
let web: ChildProcess;
let base: string;
let webLog = '';

const tracing = (extra: Record<string, string> = {}) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_BSP_SCHEDULE_DELAY: '100',
  ...extra,
});

beforeAll(async () => {
  service = await createTestService({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  await service.importCatalog(VENDORS, LISTINGS);
  otlp = await startOtlpReceiver();
  hooks = await startReceiver();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  web = await service.spawn('src/server.ts', tracing({ PORT: String(port) }), 'web listening');
  web.stdout!.on('data', (chunk: Buffer) => (webLog += chunk.toString()));
  await service.startWorker(tracing());
});
afterAll(async () => {
  await service?.close();
  await hooks?.close();
  await otlp?.close();
});

const inTrace = (traceId: string) => otlp.spans.filter((s) => s.traceId === traceId);
const parentOf = (span: ReceivedSpan) => otlp.spans.find((s) => s.spanId === span.parentSpanId);
/** The chain of parents of a span, nearest first, as far as the receiver has them. */
function ancestors(span: ReceivedSpan): ReceivedSpan[] {
  const chain: ReceivedSpan[] = [];
  for (let p = parentOf(span); p; p = parentOf(p)) chain.push(p);
  return chain;
}

describe('when tracing is on and a client places an order', () => {
  it('then the order is one trace from the web request through the job to the worker, and its webhook delivery continues it', async () => {
    const buyer = await service.client('traced buyer');
    const added = await addWebhook(
      { store: service.deps.store, allowPrivate: true, clock: Date.now },
      buyer.clientId,
      hooks.url('/traced'),
    );
    expect(added.kind).toBe('added');
    const body = orderBody(buyer.ccToken, { listings: [{ listingId: WALDEN, quantity: 1 }] });
    const res = await signed(base, buyer, 'POST', '/v1/orders', body);
    expect(res.status).toBe(200);
    const orderId = (res.body as { orderId: number }).orderId;
    const ofOrder = () => otlp.spans.filter((s) => s.attributes['order.id'] === orderId);

    // The web's span of the enqueue names the order; its trace is the order's.
    await expect
      .poll(() => ofOrder().find((s) => s.service === 'web' && s.name === 'order.enqueue'))
      .toBeTruthy();
    const enqueue = ofOrder().find((s) => s.service === 'web' && s.name === 'order.enqueue')!;
    const traceId = enqueue.traceId;
    // The worker's processing of the job, and the delivery of the order's webhook, are in the same trace.
    await expect
      .poll(() => ofOrder().filter((s) => s.service === 'worker' && s.traceId === traceId).length)
      .toBeGreaterThan(0);
    await expect
      .poll(() => inTrace(traceId).some((s) => s.name === 'webhook.deliver' && s.service === 'worker'))
      .toBe(true);
    await expect.poll(() => hooks.received.filter((r) => r.path === '/traced').length).toBeGreaterThan(0);

    // Parent to child: the request's server span in the web is the root; the worker's spans descend from it.
    const root = ancestors(enqueue).at(-1)!;
    expect(root).toMatchObject({ service: 'web', kind: SERVER, parentSpanId: undefined });
    const workerSpans = inTrace(traceId).filter((s) => s.service === 'worker');
    expect(workerSpans.length).toBeGreaterThan(0);
    for (const span of workerSpans) {
      const chain = ancestors(span);
      expect(chain.at(-1)?.spanId, `${span.name} descends from the web request`).toBe(root.spanId);
      // In order: each span starts no earlier than its parent.
      for (const [child, parent] of [span, ...chain].map((s, i, all) => [s, all[i + 1]] as const))
        if (parent) expect(child.startNs >= parent.startNs, `${child.name} after ${parent.name}`).toBe(true);
    }
    // The worker's job processing names the order; so do its payment call and the delivery.
    const processing = workerSpans.find((s) => s.kind === 5 && s.attributes['order.id'] === orderId);
    expect(processing, 'the worker span of the job').toBeDefined();
    expect(ancestors(processing!).some((s) => s.service === 'web' && s.kind === 4)).toBe(true);
    expect(
      workerSpans.some((s) => s.name.startsWith('payment.') && s.attributes['order.id'] === orderId),
    ).toBe(true);
    const delivery = workerSpans.find((s) => s.name === 'webhook.deliver')!;
    expect(delivery.attributes['order.id']).toBe(orderId);
    // Every span of the order's work carries its id: the request's, all below the enqueue, all the worker's.
    expect(root.attributes['order.id']).toBe(orderId);
    const belowEnqueue = inTrace(traceId).filter((s) => ancestors(s).includes(enqueue));
    expect(belowEnqueue.length).toBeGreaterThan(0);
    for (const span of [...belowEnqueue, ...workerSpans])
      expect(span.attributes['order.id'], `${span.service} ${span.name}`).toBe(orderId);

    // Log lines carry the trace: the web's line of this order names its trace and a span of it.
    await expect.poll(() => webLog.includes(`"orderId":${orderId}`)).toBe(true);
    const line = webLog
      .split('\n')
      .filter((l) => l.includes(`"orderId":${orderId}`))
      .map((l) => JSON.parse(l) as { trace_id?: string; span_id?: string })[0]!;
    expect(line.trace_id).toBe(traceId);
    expect(inTrace(traceId).some((s) => s.spanId === line.span_id)).toBe(true);
  });

  it('then the store operations are spans of the port, and Redis commands spans of the request', async () => {
    await expect.poll(() => otlp.spans.some((s) => s.name.startsWith('store.orders.'))).toBe(true);
    const redis = otlp.spans.filter((s) => s.attributes['db.system.name'] === 'redis');
    expect(redis.some((s) => s.service === 'web' && parentOf(s)?.kind === SERVER)).toBe(true);
  });
});

describe('when the clock runs with tracing on', () => {
  it('then each reconciliation pass is a trace of the clock, with its store operations below it', async () => {
    await service.spawn('jobs/clock.ts', tracing({ RECONCILE_CRON: '* * * * * *' }), 'clock ready');
    // A pass that finds Redis not ready yet is skipped at once: some later pass reads the store.
    const passWithStore = () =>
      otlp.spans.find(
        (pass) =>
          pass.service === 'clock' &&
          pass.name === 'reconcile.pass' &&
          inTrace(pass.traceId).some((s) => s.name.startsWith('store.') && s.parentSpanId === pass.spanId),
      );
    await expect.poll(passWithStore).toBeTruthy();
    expect(passWithStore()!.parentSpanId).toBeUndefined();
  });
});

describe('when a process exports with OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf', () => {
  it('then its spans are posted to /v1/traces as protobuf', async () => {
    const port = await freePort();
    await service.spawn(
      'src/server.ts',
      tracing({ PORT: String(port), OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }),
      'web listening',
    );
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    await expect.poll(() => otlp.contentTypes.includes('application/x-protobuf')).toBe(true);
  });
});
