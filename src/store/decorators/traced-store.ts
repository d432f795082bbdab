import { traced, tracingOn, type SpanAttributes } from '../../tracing/tracing.js';
import { STORE_PORTS, type Store } from '../port/store.port.js';

/**
 * The store with each port operation a span `store.<port>.<operation>` (the SQLite store's operations have no
 * driver spans of their own; on PostgreSQL the pg instrumentation's statement spans are their children). The
 * store itself when tracing is off. An operation whose first argument is an order id carries `order.id`.
 */
export function tracedStore(store: Store): Store {
  if (!tracingOn()) return store;
  const system = store.kind === 'sqlite' ? 'sqlite' : 'postgresql';
  const attributes =
    (port: string) =>
    (method: string, args: unknown[]): SpanAttributes => {
      const orderId = orderIdOf(port, method, args[0]);
      return orderId === undefined ? { 'db.system': system } : { 'db.system': system, 'order.id': orderId };
    };
  const ports = Object.fromEntries(
    STORE_PORTS.map((port) => [port, traced(store[port], `store.${port}`, attributes(port))]),
  );
  return { ...store, ...ports } as Store;
}

const ORDER_FIRST = new Set(['orders.get', 'orders.phaseOf', 'processing.beginAttempt']);

/** The order an operation works on: an order id first (orders.get, phaseOf), or a request naming its order. */
function orderIdOf(port: string, method: string, first: unknown): number | undefined {
  if (typeof first === 'number') return ORDER_FIRST.has(`${port}.${method}`) ? first : undefined;
  if (typeof first !== 'object' || first === null || !('orderId' in first)) return undefined;
  const { orderId } = first as { orderId: unknown };
  return typeof orderId === 'number' ? orderId : undefined;
}
