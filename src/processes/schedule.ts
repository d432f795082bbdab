import cron from 'node-cron';
import type { Logger } from '../logger.js';
import { isStoreUnavailable } from '../store/store-errors.js';

export interface ScheduledPass {
  /** Stops the schedule and waits for a running pass to reach its next safe point. */
  stop(): Promise<void>;
}

/**
 * Runs `pass` on every tick of `expression`; a tick that finds a pass running is skipped. `pass` gets a signal
 * that a stop aborts: it ends at its next batch, and whatever it left is the next pass's, here or in another process.
 */
export function schedulePass(
  name: string,
  expression: string,
  logger: Logger,
  pass: (signal: AbortSignal) => Promise<unknown>,
): ScheduledPass {
  let running: Promise<unknown> = Promise.resolve();
  const stopping = new AbortController();
  const task = cron.createTask(
    expression,
    () => {
      running = pass(stopping.signal).catch((err: unknown) => {
        // The store away (restarting, unreachable) is an outage, not a defect: this tick's pass is skipped.
        if (isStoreUnavailable(err))
          logger.warn({ err: (err as Error).message }, `${name} pass skipped: store unavailable`);
        else logger.error({ err }, `${name} pass failed; the next tick tries again`);
      });
      return running;
    },
    { name, noOverlap: true },
  );
  void task.start();
  return {
    async stop() {
      await task.stop();
      stopping.abort();
      await running;
      await task.destroy();
    },
  };
}
