import cron from 'node-cron';
import type { Logger } from '../src/logger.js';
import { runReconcilePass, type ReconcileDeps } from '../src/services/reconcile.js';
import { isStoreUnavailable } from '../src/store/store-errors.js';
import { inSpan } from '../src/tracing/tracing.js';

export interface ScheduledReconcile {
  /** Stops the schedule and waits for a running pass to reach its next safe point. */
  stop(): Promise<void>;
}

/** Runs one reconciliation pass on every tick of `expression`; a tick that finds a pass running is skipped. */
export function scheduleReconcile(
  deps: ReconcileDeps,
  expression: string,
  logger: Logger,
): ScheduledReconcile {
  let running: Promise<unknown> = Promise.resolve();
  const stopping = new AbortController();
  const task = cron.createTask(
    expression,
    () => {
      // Tracing on, each pass is a trace of its own: its store operations and the orders it enqueues are in it.
      const pass = inSpan('reconcile.pass', {}, () => runReconcilePass(deps, { signal: stopping.signal }));
      running = pass.catch((err: unknown) => {
        // The store away (restarting, unreachable) is an outage, not a defect: this tick's pass is skipped.
        if (isStoreUnavailable(err))
          logger.warn({ err: (err as Error).message }, 'reconcile pass skipped: store unavailable');
        else logger.error({ err }, 'reconcile pass failed; the next tick tries again');
      });
      return running;
    },
    { name: 'reconcile', noOverlap: true },
  );
  void task.start();
  return {
    async stop() {
      await task.stop();
      // A pass stops at its next batch; whatever it left is the next pass's, in this or another process.
      stopping.abort();
      await running;
      await task.destroy();
    },
  };
}
