// Every pass a process runs on a schedule is started here: on the ticks of a cron expression (reconcile,
// retention), or again a while after the last one ended (store counts, the webhook relay).
import cron from 'node-cron';
import type { Logger } from '../logger.js';
import { isStoreUnavailable } from '../store/store-errors.js';

export interface ScheduledPass {
  /** Stops the schedule and waits for a running pass to reach its next safe point. */
  stop(): Promise<void>;
}

/** One scheduled pass of a process: its name (in logs), when it runs, and the pass. */
export interface PassSchedule {
  name: string;
  /** A cron expression, or how long after a pass ends the next one starts. */
  when: { cron: string } | { everyMs: number };
  /** Gets a signal that a stop aborts: the pass ends at its next batch, and leaves the rest to the next one. */
  run: (signal: AbortSignal) => Promise<unknown>;
}

/** Starts `pass` on its schedule; a pass that throws is logged, and the next one tries again. */
export function schedulePass(pass: PassSchedule, logger: Logger): ScheduledPass {
  const run = (signal: AbortSignal): Promise<void> =>
    pass.run(signal).then(
      () => undefined,
      (err: unknown) => {
        // The store away (restarting, unreachable) is an outage, not a defect: this pass is skipped.
        if (isStoreUnavailable(err))
          logger.warn({ err: (err as Error).message }, `${pass.name} pass skipped: store unavailable`);
        else logger.error({ err }, `${pass.name} pass failed; the next tick tries again`);
      },
    );
  return 'cron' in pass.when ? onCron(pass.name, pass.when.cron, run) : every(pass.when.everyMs, run);
}

/** Runs `pass` on every tick of `expression`; a tick that finds a pass running is skipped. */
function onCron(name: string, expression: string, pass: (signal: AbortSignal) => Promise<void>) {
  let running: Promise<void> = Promise.resolve();
  const stopping = new AbortController();
  const task = cron.createTask(expression, () => (running = pass(stopping.signal)), {
    name,
    noOverlap: true,
  });
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

/** Runs `pass` now, and again `everyMs` after each one ended. */
function every(everyMs: number, pass: (signal: AbortSignal) => Promise<void>): ScheduledPass {
  const stopping = new AbortController();
  const passes = repeat(async () => {
    await pass(stopping.signal);
    return everyMs;
  });
  passes.wake();
  return {
    async stop() {
      stopping.abort();
      await passes.stop();
    },
  };
}

export interface Repeating extends ScheduledPass {
  /** Runs the pass at once, or right after the one running. */
  wake(): void;
}

/**
 * Runs `pass` at each wake() and again when the wait it returned (ms) has passed since it ended; it must not
 * throw. Nothing runs before the first wake().
 */
export function repeat(pass: () => Promise<number>): Repeating {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let inPass = false;
  let again = false;
  const schedule = (ms: number) => {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(tick, ms);
  };
  function tick() {
    inPass = true;
    again = false;
    running = pass().then((waitMs) => {
      inPass = false;
      schedule(again ? 0 : waitMs);
    });
  }
  return {
    wake() {
      if (inPass) again = true;
      else schedule(0);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
