import type { Logger } from '../logger.js';
import type { WebhookQueue } from '../queue/webhook.queue.js';
import type { DeliveryAttempt, Store } from '../store/port/store.port.js';

export interface RelayDeps {
  store: Pick<Store, 'webhooks'>;
  queue: Pick<WebhookQueue, 'enqueue' | 'missing'>;
  clock: () => number;
  logger: Logger;
}

/** Deliveries a pass hands over per read of the outbox; a pass that handed this many is followed by another at once. */
export const RELAY_BATCH = 500;
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
    const fresh = await deps.store.webhooks.unenqueued(RELAY_BATCH);
    handed += await hand(deps, fresh);
    if (fresh.length < RELAY_BATCH) break;
  }
  const overdue = await deps.store.webhooks.overdue(deps.clock() - LOST_AFTER_MS, RELAY_BATCH);
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
