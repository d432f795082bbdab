// The OpenTelemetry side of tracing, loaded by ./preload.ts only when OTEL_EXPORTER_OTLP_ENDPOINT is set: the
// Node SDK with its exporter, sampler and batch processor configured by the standard OTEL_* variables
// (OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or http/json, OTEL_TRACES_SAMPLER, OTEL_BSP_SCHEDULE_DELAY, ...),
// and the instrumentations of http, pg, ioredis and pino (trace_id and span_id on every log line).
// BullMQ's own add-on (bullmq-otel) is handed to each queue and worker through tracing.ts's queueTelemetry.
import {
  context,
  propagation,
  SpanStatusCode,
  trace,
  type Context,
  type TextMapGetter,
} from '@opentelemetry/api';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { PinoInstrumentation } from '@opentelemetry/instrumentation-pino';
import { NodeSDK, type NodeSDKConfiguration } from '@opentelemetry/sdk-node';
// The SDK's own reading of OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_PROTOCOL and OTEL_BSP_*: given span
// processors of its own, the SDK would no longer make these from the environment (the package's version is pinned).
import { getSpanProcessorsFromEnv } from '@opentelemetry/sdk-node/build/src/utils.js';
import { BullMQOtel } from 'bullmq-otel';
import { installTracing } from './tracing.js';

const TRACER = 'book-order-service';

type SpanProcessor = NonNullable<NodeSDKConfiguration['spanProcessors']>[number];

/**
 * Every span started under an order's context carries its `order.id` (docs/api.md#operations): the id travels as
 * baggage, set by withOrder, through the job and the stored trace context of the order's events.
 */
const ORDER_BAGGAGE = 'order.id';
const orderIdOnEverySpan: SpanProcessor = {
  onStart(span, parentContext) {
    const orderId = propagation.getBaggage(parentContext)?.getEntry(ORDER_BAGGAGE)?.value;
    if (orderId && /^\d+$/.test(orderId)) span.setAttribute('order.id', Number(orderId));
  },
  onEnd: () => undefined,
  forceFlush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
};

const carrierGetter: TextMapGetter<Record<string, string>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

/** Starts the SDK for a process of this role (the service name unless OTEL_SERVICE_NAME says otherwise). */
export function startOtel(role: string): void {
  // Traces only: metrics stay Prometheus's (/metrics), logs stay pino's on stdout, unless asked for.
  process.env.OTEL_METRICS_EXPORTER ??= 'none';
  process.env.OTEL_LOGS_EXPORTER ??= 'none';
  const sdk = new NodeSDK({
    serviceName: process.env.OTEL_SERVICE_NAME || role,
    spanProcessors: [orderIdOnEverySpan, ...getSpanProcessorsFromEnv(undefined)],
    instrumentations: [
      // The exporter's own posts to the collector are not traced: the SDK suppresses tracing while exporting.
      new HttpInstrumentation(),
      new PgInstrumentation({ requireParentSpan: true }),
      new IORedisInstrumentation({ requireParentSpan: true }),
      new PinoInstrumentation({
        disableLogSending: true,
        logKeys: { traceId: 'trace_id', spanId: 'span_id', traceFlags: 'trace_flags' },
      }),
    ],
  });
  sdk.start();
  const tracer = trace.getTracer(TRACER);
  const telemetry = new BullMQOtel({ tracerName: 'bullmq' });
  installTracing({
    span(name, attributes, fn, parent) {
      const parentContext: Context = parent
        ? propagation.extract(context.active(), JSON.parse(parent) as Record<string, string>, carrierGetter)
        : context.active();
      return tracer.startActiveSpan(name, { attributes }, parentContext, async (span) => {
        try {
          return await fn();
        } catch (err) {
          span.recordException(err as Error);
          span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
          throw err;
        } finally {
          span.end();
        }
      });
    },
    active: () => trace.getActiveSpan() !== undefined,
    withOrder(orderId, fn) {
      trace.getActiveSpan()?.setAttribute('order.id', orderId);
      const active = context.active();
      const baggage = (propagation.getBaggage(active) ?? propagation.createBaggage()).setEntry(
        ORDER_BAGGAGE,
        {
          value: String(orderId),
        },
      );
      return context.with(propagation.setBaggage(active, baggage), fn);
    },
    capture() {
      if (!trace.getActiveSpan()) return undefined;
      const carrier: Record<string, string> = {};
      propagation.inject(context.active(), carrier);
      return JSON.stringify(carrier);
    },
    queueTelemetry: () => telemetry,
    shutdown: () => sdk.shutdown(),
  });
}
