import { LOST_AFTER_MS, RELAY_BATCH, relayDeliveries, type RelayDeps } from '../services/webhook-relay.js';
import { repeat, type ScheduledPass } from './schedule.js';

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
): ScheduledPass {
  let failing = false;
  let everyMs = intervalMs;
  const passes = repeat(() =>
    relayDeliveries(deps).then(
      (handed) => {
        if (failing) deps.logger.info('webhook relay passes again');
        failing = false;
        return handed >= RELAY_BATCH ? 0 : everyMs;
      },
      (err: unknown) => {
        // Redis or the store away: the rows stay in the outbox for the next pass; one warning per outage.
        if (!failing)
          deps.logger.warn({ err: (err as Error).message }, 'webhook relay pass failed; retrying');
        failing = true;
        return intervalMs;
      },
    ),
  );
  const watch = deps.store.webhooks.watchOutbox?.(passes.wake);
  if (watch) everyMs = watchedIntervalMs;
  passes.wake();
  return {
    async stop() {
      const stopped = passes.stop();
      await watch?.close();
      await stopped;
    },
  };
}
