// The tracing facade (src/tracing/tracing.ts): off, it hands back what it was given; on, a port's calls become
// spans under the active one and answer exactly as before (synchronous answers and throws stay synchronous).
import { describe, expect, it } from 'vitest';
import { roleOf } from '../../src/tracing/preload.js';
import {
  captureTraceContext,
  inSpan,
  installTracing,
  traced,
  tracingOn,
  type SpanAttributes,
} from '../../src/tracing/tracing.js';

const port = {
  async get(orderId: number) {
    return { orderId };
  },
  count() {
    return 3;
  },
  fail() {
    throw new Error('sync failure');
  },
};

describe('tracing', () => {
  it('when tracing is off, then ports are left as they are and spans are the work itself', async () => {
    expect(tracingOn()).toBe(false);
    expect(traced(port, 'store.orders')).toBe(port);
    expect(await inSpan('x', {}, async () => 7)).toBe(7);
    expect(captureTraceContext()).toBeUndefined();
  });

  it('names each process by its entry, the default service name', () => {
    expect(roleOf('/app/dist/src/server.js')).toBe('web');
    expect(roleOf('/app/src/server.ts')).toBe('web');
    expect(roleOf('/app/dist/workers/order.worker.js')).toBe('worker');
    expect(roleOf('/app/jobs/clock.ts')).toBe('clock');
  });

  it('when tracing is on, then calls under a span are spans of their own, and answer as before', async () => {
    const spans: { name: string; attributes: SpanAttributes }[] = [];
    let active = false;
    installTracing({
      span(name, attributes, fn) {
        spans.push({ name, attributes });
        const was = active;
        active = true;
        try {
          return fn().finally(() => (active = was));
        } catch (err) {
          active = was;
          return Promise.reject(err);
        }
      },
      active: () => active,
      withOrder: (_, fn) => fn(),
      capture: () => (active ? '{"traceparent":"00-x-y-01"}' : undefined),
      queueTelemetry: () => undefined,
      shutdown: async () => undefined,
    });
    const wrapped = traced(port, 'store.orders', (_, [first]): SpanAttributes =>
      typeof first === 'number' ? { 'order.id': first } : {},
    );
    // Outside any span (a poll): not traced.
    expect(await wrapped.get(1)).toEqual({ orderId: 1 });
    expect(spans).toEqual([]);
    await inSpan('request', {}, async () => {
      expect(await wrapped.get(5)).toEqual({ orderId: 5 });
      expect(wrapped.count()).toBe(3);
      expect(() => wrapped.fail()).toThrow('sync failure');
      expect(captureTraceContext()).toBe('{"traceparent":"00-x-y-01"}');
    });
    expect(spans.map((s) => s.name)).toEqual([
      'request',
      'store.orders.get',
      'store.orders.count',
      'store.orders.fail',
    ]);
    expect(spans[1]!.attributes).toEqual({ 'order.id': 5 });
  });
});
