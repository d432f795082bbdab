import type { Logger } from '../logger.js';
import type { OrderStore } from '../store/store.port.js';

export interface BackpressureDeps {
  orders: Pick<OrderStore, 'countUnsettled'>;
  /** MAX_UNSETTLED_ORDERS: past this many unsettled orders, no real order is accepted. */
  limit: number;
  clock: () => number;
  logger: Logger;
  /** How often the figure is read again from the store (default 1 s). */
  refreshMs?: number;
}

export type Backpressure = ReturnType<typeof createBackpressure>;

const RETRY_AFTER_S = { min: 1, max: 60 };
// Weight of the newest drain rate in the smoothed one.
const SMOOTHING = 0.3;

/**
 * CONTRACT.md section 12: "more than MAX_UNSETTLED_ORDERS accepted orders not settled yet" refuses real
 * orders. The figure costs no store query per request: the store's count, read in the background every
 * second, plus the orders this process accepted since (so a burst through one process is seen at once).
 * Other processes' acceptances show at the next read: each may overshoot the limit by a second of its intake.
 */
export function createBackpressure(deps: BackpressureDeps) {
  const refreshMs = deps.refreshMs ?? 1000;
  let read: number | null = null;
  let readAt = 0;
  // Orders reserved or accepted here since the last read began.
  let local = 0;
  // Orders settled per second, smoothed over the reads; 0 until a read shows some settled.
  let drainPerS = 0;
  let first: Promise<void> | null = null;
  let timer: NodeJS.Timeout | null = null;
  let closed = false;

  async function refresh(): Promise<void> {
    const counted = local;
    const startedAt = deps.clock();
    try {
      const now = await deps.orders.countUnsettled();
      if (read !== null && startedAt > readAt) {
        const settled = Math.max(0, read + counted - now);
        drainPerS += SMOOTHING * ((settled * 1000) / (startedAt - readAt) - drainPerS);
      }
      // Acceptances during the read may be in it and in `local` too: counted twice until the next read.
      read = now;
      readAt = startedAt;
      local -= counted;
    } catch (err) {
      deps.logger.warn({ err }, 'unsettled orders not counted; keeping the last figure');
    }
  }

  function schedule(): void {
    if (closed) return;
    timer = setTimeout(() => void refresh().finally(schedule), refreshMs);
    // A web process ends when its server closes, whatever this timer says.
    timer.unref();
  }

  // The first real order of a process waits for the first read; the timer starts with it.
  const ready = (): Promise<void> =>
    (first ??= refresh().finally(() => {
      if (read === null) first = null;
      else schedule();
    }));

  const figure = (): number => (read ?? 0) + local;

  return {
    /**
     * Room for up to `wanted` real orders, taken in request order as if each came alone: an order is admitted
     * while the figure is at most the limit. Resolves with how many were admitted (and are now counted).
     */
    async reserve(wanted: number): Promise<number> {
      if (wanted <= 0) return 0;
      await ready();
      const admitted = Math.max(0, Math.min(wanted, deps.limit - figure() + 1));
      local += admitted;
      return admitted;
    },
    /** After acceptance: of the `reserved` orders, `created` are new (duplicates and failures add nothing). */
    release(reserved: number, created: number): void {
      local -= reserved - created;
    },
    /** Seconds until the workers have likely brought the figure back to the limit, by the recent drain rate. */
    retryAfterS(): number {
      const excess = figure() - deps.limit;
      const seconds = drainPerS > 0 ? Math.ceil(excess / drainPerS) : RETRY_AFTER_S.max;
      return Math.min(RETRY_AFTER_S.max, Math.max(RETRY_AFTER_S.min, seconds));
    },
    /** This process's figure of unsettled orders; null before the first read. */
    unsettled(): number | null {
      return read === null ? null : figure();
    },
    close(): void {
      closed = true;
      if (timer) clearTimeout(timer);
    },
  };
}
