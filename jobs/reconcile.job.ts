import type { Logger } from '../src/logger.js';
import { runReconcilePass, type ReconcileDeps } from '../src/services/reconcile.js';
import { schedulePass, type ScheduledPass } from './scheduled-pass.js';

/** Runs one reconciliation pass on every tick of `expression`; a tick that finds a pass running is skipped. */
export function scheduleReconcile(deps: ReconcileDeps, expression: string, logger: Logger): ScheduledPass {
  return schedulePass('reconcile', expression, logger, (signal) => runReconcilePass(deps, { signal }));
}
