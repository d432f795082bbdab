import type { Logger } from '../logger.js';
import type { WebhookQueue } from '../queue/webhook.queue.js';
import type { DeliveryAttempt, Store } from '../store/port/store.port.js';

export interface RelayDeps {
  store: Pick<Store, 'webhooks'>;
  queue: Pick<WebhookQueue, 'enqueue' | 'missing'>;
  clock: () => number;
  logger: Logger;
}

const BATCH = 500;
// A pass hands over at most this many batches, so a backlog never starves the search for lost jobs.
const MAX_BATCHES = 40;
/**
 * How long past its due time a pending attempt that was handed to the queue may stay unmade before it is
 * handed again: longer than an attempt takes (at most 10 s). Handing again is harmless: the job id is the
 * delivery's and the attempt's, so a job still in the queue is not duplicated.
 */
export const LOST_AFTER_MS = 15_000;

/**
 * One relay pass over the outbox: every pending delivery whose next attempt is not in the queue yet is handed
 * to it (delayed until due), then those handed long ago, still unmade and no longer in the queue (Redis
 * restarted empty, a job failed for good) are handed again. Returns how many it handed.
 */
export async function relayDeliveries(deps: RelayDeps): Promise<number> {
  let handed = 0;
  for (let batch = 0; batch < MAX_BATCHES; batch += 1) {
    const fresh = await deps.store.webhooks.unenqueued(BATCH);
    handed += await hand(deps, fresh);
    if (fresh.length < BATCH) break;
  }
  const overdue = await deps.store.webhooks.overdue(deps.clock() - LOST_AFTER_MS, BATCH);
  // A job its endpoint deferred (busy or paused) is still in the queue, delayed: only missing ones are lost.
  const lost = await deps.queue.missing(overdue);
  if (lost.length > 0)
    deps.logger.info({ count: lost.length }, 'webhook deliveries handed to the queue again');
  if (lost.length > 0) await deps.queue.enqueue(lost, deps.clock());
  // All are in the queue now: none is looked for again before LOST_AFTER_MS has passed.
  if (overdue.length > 0) await deps.store.webhooks.markEnqueued(overdue, deps.clock());
  return handed + lost.length;
}

async function hand(deps: RelayDeps, attempts: readonly DeliveryAttempt[]): Promise<number> {
  if (attempts.length === 0) return 0;
  const now = deps.clock();
  await deps.queue.enqueue(attempts, now);
  // Marked after the queue has them: a crash in between only hands them again.
  await deps.store.webhooks.markEnqueued(attempts, now);
  return attempts.length;
}

export interface RunningRelay {
  /** Stops the schedule and waits for a running pass. */
  stop(): Promise<void>;
}

/**
 * Runs a relay pass every `intervalMs`, and at once again after a pass that found a full batch. Where the store
 * signals new deliveries (`watchOutbox`: LISTEN on PostgreSQL), a signal starts a pass at once (or right after
 * the running one), and the schedule only looks for lost jobs and missed signals, every `watchedIntervalMs`.
 */
export function startRelay(
  deps: RelayDeps,
  {
    intervalMs = 1000,
    watchedIntervalMs = LOST_AFTER_MS,
  }: { intervalMs?: number; watchedIntervalMs?: number } = {},
): RunningRelay {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let inPass = false;
  let again = false;
  let failing = false;
  const schedule = (ms: number) => {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(tick, ms);
  };
  const wake = () => {
    if (inPass) again = true;
    else schedule(0);
  };
  const watch = deps.store.webhooks.watchOutbox?.(wake);
  const every = watch ? watchedIntervalMs : intervalMs;
  const done = (ms: number) => {
    inPass = false;
    schedule(again ? 0 : ms);
  };
  function tick() {
    inPass = true;
    again = false;
    running = relayDeliveries(deps).then(
      (handed) => {
        if (failing) deps.logger.info('webhook relay passes again');
        failing = false;
        done(handed >= BATCH ? 0 : every);
      },
      (err: unknown) => {
        // Redis or the store away: the rows stay in the outbox for the next pass; one warning per outage.
        if (!failing)
          deps.logger.warn({ err: (err as Error).message }, 'webhook relay pass failed; retrying');
        failing = true;
        done(intervalMs);
      },
    );
  }
  tick();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await watch?.close();
      await running;
    },
  };
}
