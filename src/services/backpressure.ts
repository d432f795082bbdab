import type { Logger } from '../logger.js';
import type { OrderStore } from '../store/port/store.port.js';

export interface BackpressureDeps {
  orders: Pick<OrderStore, 'countUnsettled' | 'countUnsettledOfClient'>;
  /** MAX_UNSETTLED_ORDERS: past this many items of unsettled orders, no real order is accepted. */
  limit: number;
  /** MAX_UNSETTLED_PER_CLIENT: past this many items of one client's unsettled orders, none of its orders is. */
  perClientLimit: number;
  clock: () => number;
  logger: Logger;
  /** How often the figures are read again from the store (default 1 s). */
  refreshMs?: number;
}

export type Backpressure = ReturnType<typeof createBackpressure>;

/** How many of the orders asked for were admitted; for the others, when to retry and which limit refused. */
export interface Admission {
  admitted: number;
  retryAfterS: number;
  /** The client's share refused them (MAX_UNSETTLED_PER_CLIENT), not the service's limit. */
  ofClient: boolean;
}

const RETRY_AFTER_S = { min: 1, max: 60 };
// Weight of the newest drain rate in the smoothed one.
const SMOOTHING = 0.3;
// Clients whose figures one process keeps; past it, those not read within the last refresh are forgotten.
const MAX_CLIENTS = 10_000;

/**
 * One figure of unsettled items (the items of unsettled orders): the store's count as last read, plus the items
 * of the orders this process accepted since (so a burst through one process is seen at once), and the rate at
 * which they settle, smoothed over reads.
 */
function unsettledFigure(count: () => Promise<number>, deps: Pick<BackpressureDeps, 'clock' | 'logger'>) {
  let read: number | null = null;
  let readAt = 0;
  // Items of the orders reserved or accepted here since the last read began.
  let local = 0;
  // Items settled per second; 0 until a read shows some settled.
  let drainPerS = 0;
  let reading: Promise<void> | null = null;

  async function refresh(): Promise<void> {
    const counted = local;
    const startedAt = deps.clock();
    try {
      const now = await count();
      if (read !== null && startedAt > readAt) {
        const settled = Math.max(0, read + counted - now);
        drainPerS += SMOOTHING * ((settled * 1000) / (startedAt - readAt) - drainPerS);
      }
      // Acceptances during the read may be in it and in `local` too: counted twice until the next read.
      read = now;
      readAt = startedAt;
      local -= counted;
    } catch (err) {
      deps.logger.warn({ err }, 'unsettled items not counted; keeping the last figure');
    }
  }

  return {
    /** Reads the store again (one read at a time: concurrent callers share it). */
    refresh: (): Promise<void> =>
      (reading ??= refresh().finally(() => {
        reading = null;
      })),
    value: (): number => (read ?? 0) + local,
    isRead: (): boolean => read !== null,
    readAt: (): number => readAt,
    add(n: number): void {
      local += n;
    },
    /** Seconds until the figure is likely back to `limit`, by the recent drain rate. */
    retryAfterS(limit: number): number {
      const excess = (read ?? 0) + local - limit;
      const seconds = drainPerS > 0 ? Math.ceil(excess / drainPerS) : RETRY_AFTER_S.max;
      return Math.min(RETRY_AFTER_S.max, Math.max(RETRY_AFTER_S.min, seconds));
    },
  };
}

type Figure = ReturnType<typeof unsettledFigure>;

/**
 * docs/api.md#backpressure: "more than MAX_UNSETTLED_ORDERS items of accepted orders not settled yet" refuses
 * real orders; and each client may hold at most MAX_UNSETTLED_PER_CLIENT such items, so that one client cannot
 * fill the shared backlog and have every other client refused. Work is charged by its cost: an order of 250
 * items weighs what 250 orders of one item do. The figures cost no store query per request: the
 * service's count is read in the background every second, a client's when it orders and its figure is older
 * than a second (a sum over the partial index orders_unsettled_client, which holds each order's item count),
 * each plus the items of the orders this process accepted since. Other processes' acceptances show at the next
 * read: each may overshoot a limit by what it accepts in a second.
 */
export function createBackpressure(deps: BackpressureDeps) {
  const refreshMs = deps.refreshMs ?? 1000;
  const total = unsettledFigure(() => deps.orders.countUnsettled(), deps);
  const clients = new Map<number, Figure>();
  let first: Promise<void> | null = null;
  let timer: NodeJS.Timeout | null = null;
  let closed = false;

  function schedule(): void {
    if (closed) return;
    timer = setTimeout(() => void total.refresh().finally(schedule), refreshMs);
    // A web process ends when its server closes, whatever this timer says.
    timer.unref();
  }

  // The first real order of a process waits for the first read; the timer starts with it.
  const ready = (): Promise<void> =>
    (first ??= total.refresh().finally(() => {
      if (!total.isRead()) first = null;
      else schedule();
    }));

  /** The client's figure, read again first when it is older than the refresh period. */
  async function clientFigure(clientId: number): Promise<Figure> {
    let figure = clients.get(clientId);
    if (!figure) {
      if (clients.size >= MAX_CLIENTS) forgetIdleClients();
      figure = unsettledFigure(() => deps.orders.countUnsettledOfClient(clientId), deps);
      clients.set(clientId, figure);
    }
    if (!figure.isRead() || deps.clock() - figure.readAt() >= refreshMs) await figure.refresh();
    return figure;
  }

  function forgetIdleClients(): void {
    const now = deps.clock();
    for (const [clientId, figure] of clients)
      if (now - figure.readAt() >= refreshMs) clients.delete(clientId);
    if (clients.size >= MAX_CLIENTS) clients.clear();
  }

  return {
    /**
     * Admits the client's real orders, given as their item counts, in request order as if each came alone: an
     * order is admitted while the service's figure is at most MAX_UNSETTLED_ORDERS and the client's at most
     * MAX_UNSETTLED_PER_CLIENT, and its items are then counted in both; the first refused ends the admission.
     */
    async reserve(clientId: number, itemsPerOrder: readonly number[]): Promise<Admission> {
      if (itemsPerOrder.length === 0) return { admitted: 0, retryAfterS: 0, ofClient: false };
      const [, client] = await Promise.all([ready(), clientFigure(clientId)]);
      let admitted = 0;
      for (const items of itemsPerOrder) {
        if (total.value() > deps.limit || client.value() > deps.perClientLimit) break;
        total.add(items);
        client.add(items);
        admitted++;
      }
      if (admitted === itemsPerOrder.length) return { admitted, retryAfterS: 0, ofClient: false };
      const ofClient = total.value() <= deps.limit;
      const retryAfterS = ofClient ? client.retryAfterS(deps.perClientLimit) : total.retryAfterS(deps.limit);
      return { admitted, retryAfterS, ofClient };
    },
    /** After acceptance: of the `reserved` items, those of the orders `created` now stay counted. */
    release(clientId: number, reserved: number, created: number): void {
      total.add(created - reserved);
      clients.get(clientId)?.add(created - reserved);
    },
    /** This process's figure of unsettled items; null before the first read. */
    unsettled(): number | null {
      return total.isRead() ? total.value() : null;
    },
    close(): void {
      closed = true;
      if (timer) clearTimeout(timer);
    },
  };
}
