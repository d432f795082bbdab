// What the rest of the service knows of tracing: a handful of calls that do nothing unless tracing was started.
// This file imports nothing; OpenTelemetry itself is loaded by ./preload.ts, and only when
// OTEL_EXPORTER_OTLP_ENDPOINT is set (otel.ts installs the implementation here). Unset, every call below is a
// check of one variable, and no OpenTelemetry module is in memory.

export type SpanAttributes = Record<string, string | number | boolean>;

/** What otel.ts provides. */
export interface TracingImpl {
  /** Runs `fn` in a new span, child of the active one (or of `parent`, a context taken by `capture`). */
  span<T>(name: string, attributes: SpanAttributes, fn: () => Promise<T>, parent?: string): Promise<T>;
  /** Whether a span is active: work outside any (a timer, a poll) is not traced on its own. */
  active(): boolean;
  /** Runs `fn` with `orderId` in its context: every span under it, in this process or past a job, carries it. */
  withOrder<T>(orderId: number, fn: () => Promise<T>): Promise<T>;
  /** The active context as a string to store (W3C trace context), or undefined when no span is active. */
  capture(): string | undefined;
  /** BullMQ's telemetry (bullmq-otel) for a queue or a worker. */
  queueTelemetry(): unknown;
  /** Exports what is still buffered and stops. */
  shutdown(): Promise<void>;
}

let impl: TracingImpl | undefined;

/** Called once, by otel.ts, before the process's own modules are loaded. */
export function installTracing(tracing: TracingImpl): void {
  impl = tracing;
}

export const tracingOn = (): boolean => impl !== undefined;

/** Exports the spans still buffered: a process calls it last, before it exits. */
export async function flushTracing(): Promise<void> {
  await impl?.shutdown();
}

/** `fn` in a span named `name`; with tracing off, `fn` itself. */
export function inSpan<T>(
  name: string,
  attributes: SpanAttributes,
  fn: () => Promise<T>,
  parent?: string,
): Promise<T> {
  return impl ? impl.span(name, attributes, fn, parent) : fn();
}

/**
 * Runs `fn` as work on the order: the active span and every span started under it carry `order.id`, in this
 * process and in those its jobs and events reach. With tracing off, `fn` itself.
 */
export function withOrder<T>(orderId: number, fn: () => Promise<T>): Promise<T> {
  return impl ? impl.withOrder(orderId, fn) : fn();
}

/** The active trace context, to store with a change so that what it causes later continues its trace. */
export function captureTraceContext(): string | undefined {
  return impl?.capture();
}

/** The `telemetry` option of a BullMQ Queue or Worker: spans that carry the context through the job. */
export function queueTelemetry<T>(): T | undefined {
  return impl?.queueTelemetry() as T | undefined;
}

/**
 * `target` with each method call a span `${prefix}.${method}`, child of the active span (a call outside any, such
 * as a poll's, is not traced: it would start a trace of its own each time); `target` itself when tracing is off.
 * For ports whose calls are not traced below them (the SQLite store, the payment gateway).
 */
export function traced<T extends object>(
  target: T,
  prefix: string,
  attributes: (method: string, args: unknown[]) => SpanAttributes = () => ({}),
): T {
  const tracing = impl;
  if (!tracing) return target;
  const wrapped = Object.create(Object.getPrototypeOf(target) as object | null) as Record<string, unknown>;
  for (const key of Object.keys(target)) {
    const value = (target as Record<string, unknown>)[key];
    wrapped[key] =
      typeof value === 'function'
        ? (...args: unknown[]) => {
            if (!tracing.active()) return (value as (...a: unknown[]) => unknown).apply(target, args);
            let result: unknown;
            let thrown: { error: unknown } | undefined;
            const span = tracing.span(`${prefix}.${key}`, attributes(key, args), () => {
              try {
                result = (value as (...a: unknown[]) => unknown).apply(target, args);
              } catch (error) {
                thrown = { error };
                throw error;
              }
              return Promise.resolve(result);
            });
            if (result instanceof Promise) return span;
            // A method that answers (or throws) synchronously keeps doing so; its span ends at once.
            void span.catch(() => undefined);
            if (thrown) throw thrown.error;
            return result;
          }
        : value;
  }
  return wrapped as T;
}
