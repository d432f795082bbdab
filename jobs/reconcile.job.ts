import type { Logger } from '../src/logger.js';
import { runReconcilePass, type ReconcileDeps } from '../src/services/reconcile.js';
import { inSpan } from '../src/tracing/tracing.js';
import { schedulePass, type ScheduledPass } from '../src/processes/schedule.js';

/** Runs one reconciliation pass on every tick of `expression`; a tick that finds a pass running is skipped. */
export function scheduleReconcile(deps: ReconcileDeps, expression: string, logger: Logger): ScheduledPass {
  // Tracing on, each pass is a trace of its own: its store operations and the orders it enqueues are in it.
  return schedulePass('reconcile', expression, logger, (signal) =>
    inSpan('reconcile.pass', {}, () => runReconcilePass(deps, { signal })),
  );
}
