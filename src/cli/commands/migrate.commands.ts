import type { MigrationStepProgress, MigrationStepsRun } from '../../store/port/store.port.js';
import { parseCommandArgs, positiveIntOption, type CommandRun } from './command.js';

/** Orders a batch of a step reads and writes in one transaction: a few milliseconds of the write lock. */
const DEFAULT_BATCH = 1000;
/** Batches between two progress lines on stderr. */
const REPORT_EVERY = 100;

/** A step as the command prints it. */
const shown = (step: MigrationStepProgress) => ({
  migration: step.version,
  name: step.name,
  done: step.done,
  orders: step.position,
  of: step.upto,
  servesBefore: step.servesBefore,
});

/**
 * `admin migrate`: applies the schema migrations not applied yet (opening the store does, refused while processes
 * they would break are alive), then runs the heavy steps of migrations in batches, each its own transaction, while
 * the service serves: resumable (an interrupted run goes on where its last batch committed), and safe beside
 * another run. Prints what it did and what remains.
 */
export const migrate: CommandRun = {
  async run(args, ctx) {
    const { values } = parseCommandArgs(args, {
      'batch-size': { type: 'string' },
      'max-batches': { type: 'string' },
    });
    const batchSize = positiveIntOption(values['batch-size'] ?? String(DEFAULT_BATCH), 'batch-size');
    const limit =
      values['max-batches'] === undefined
        ? Infinity
        : positiveIntOption(values['max-batches'], 'max-batches');
    const store = await ctx.store();
    const total: MigrationStepsRun = { batches: 0, rows: 0, steps: await store.steps.list() };
    while (total.batches < limit) {
      const run = await store.steps.run({
        batchSize,
        maxBatches: Math.min(REPORT_EVERY, limit - total.batches),
        waiting: (version) =>
          ctx.out.note(`migration ${version}: waiting while another admin migrate run builds an index`),
      });
      total.batches += run.batches;
      total.rows += run.rows;
      total.steps = run.steps;
      if (run.batches === 0) break;
      for (const step of run.steps.filter((s) => !s.done))
        ctx.out.note(`migration ${step.version}: ${step.position} of ${step.upto} orders`);
    }
    const remaining = total.steps.filter((step) => !step.done);
    return {
      schema: store.schemaVersion,
      batches: total.batches,
      orders: total.rows,
      steps: total.steps.map(shown),
      remaining: remaining.map((step) => step.version),
    };
  },
};
