import { setTimeout as sleep } from 'node:timers/promises';
import { STORE_PORTS, type Store } from '../port/store.port.js';

/** SQLITE_BUSY and its extended codes (_SNAPSHOT, _RECOVERY, _TIMEOUT): another connection holds what we need. */
export function isSqliteBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/**
 * The first pause after a busy try, doubled after each one up to the longest. The lock is held for one commit
 * (its writes to the log; the flush comes after, outside the lock) and a try that finds it taken costs
 * microseconds: a longer pause would only add to the wait of a caller whose commit comes after the holder's (a
 * pause of 16 ms did, up to 16 ms past the release).
 */
const FIRST_PAUSE_MS = 1;
const LONGEST_PAUSE_MS = 2;

/**
 * The store of a process that must not stall (the web), on a connection whose busy timeout is 0: an operation
 * that finds the write lock taken by another process fails at once with SQLITE_BUSY and, instead of sleeping in
 * SQLite's busy handler (which sleeps in the calling thread, holding up every request of the process), is tried
 * again after a pause between turns of the event loop, until `waitMs` has passed since its first try; then its
 * SQLITE_BUSY is thrown (503 / 5030). Meanwhile the process answers everything else: reads never wait for the
 * write lock in WAL mode.
 *
 * Trying again is safe because every operation of the SQLite adapters is one transaction or one statement, and a
 * busy one did nothing: BEGIN IMMEDIATE failed before it began, or the transaction was rolled back.
 */
export function waitUnblocked(
  store: Store,
  waitMs: number,
  pause: (ms: number) => Promise<unknown> = sleep,
): Store {
  const retried = <T extends object>(part: T): T => {
    const wrapped = { ...part } as Record<string, unknown>;
    for (const [name, operation] of Object.entries(part)) {
      if (typeof operation !== 'function') continue;
      wrapped[name] = async (...args: unknown[]) => {
        const deadline = performance.now() + waitMs;
        for (let wait = FIRST_PAUSE_MS; ; wait = Math.min(wait * 2, LONGEST_PAUSE_MS)) {
          try {
            return await (operation as (...a: unknown[]) => Promise<unknown>).apply(part, args);
          } catch (err) {
            const left = deadline - performance.now();
            if (!isSqliteBusy(err) || left <= 0) throw err;
            await pause(Math.min(wait, left));
          }
        }
      };
    }
    return wrapped as T;
  };
  const ports = Object.fromEntries(STORE_PORTS.map((port) => [port, retried(store[port])]));
  return { ...store, ...ports } as Store;
}
