import { STORE_PORTS, type Store } from '../port/store.port.js';
import type { WalFlusher } from './wal-flusher.js';

/**
 * Operations whose commit does not wait for its own flush:
 * - the sandbox processor's record of an authorisation (payments.sqlite.ts says why nothing can rest on it); the
 *   settlement after it flushes it with itself;
 * - an order's acceptance: its caller waits for `orders.durable()` before it tells anyone what it stored, and
 *   enqueues the order's job meanwhile (the port says why that is safe);
 * - an attempt's count and reservation: the worker waits for `orders.durable()` before anything outside the
 *   store acts on them (a processor outside it paid, the order's end announced); the sandbox processor's
 *   authorisation is a commit in this log after them, so the settlement's flush covers all three
 *   (process-order.ts).
 * A synchronous order answered with what the worker announced is not flushed by the web at all: the settlement's
 * flush covers its acceptance and reservation too (one log, flushed whole, and a crash keeps a prefix of it), so
 * such an order waits for one flush, not three.
 */
const UNFLUSHED: Partial<Record<(typeof STORE_PORTS)[number], readonly string[]>> = {
  payments: ['authorizeOnce'],
  orders: ['accept', 'acceptMany'],
  processing: ['beginAttempt', 'beginAttemptMany', 'reserve'],
};

/**
 * The SQLite store whose every operation resolves only once what it wrote, or read of another process's
 * writing, is on the disk (wal-flusher.ts): a write waits for the flush that covers its commit, and a read waits
 * for one only when something was committed since the last flush began, by this process or another (a commit
 * is visible to other connections before its writer's flush). An operation that fails flushes nothing.
 */
export function flushedStore(store: Store, flusher: WalFlusher): Store {
  const flushed = <T extends object>(part: T, unflushed: readonly string[]): T => {
    const wrapped = { ...part } as Record<string, unknown>;
    for (const [name, operation] of Object.entries(part)) {
      if (typeof operation !== 'function' || unflushed.includes(name)) continue;
      wrapped[name] = async (...args: unknown[]) => {
        const result: unknown = await (operation as (...a: unknown[]) => Promise<unknown>).apply(part, args);
        await flusher.flushed();
        return result;
      };
    }
    return wrapped as T;
  };
  const ports = Object.fromEntries(
    STORE_PORTS.map((port) => [port, flushed(store[port], UNFLUSHED[port] ?? [])]),
  );
  return { ...store, ...ports } as Store;
}
