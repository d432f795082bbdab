import {
  MigrationStepsPendingError,
  type MigrationGate,
  type MigrationSteps,
} from './port/migrations.port.js';

/** How a store opens with respect to the processes around it (both adapters take these). */
export interface MigrationOptions {
  /** Asked before migrating a store that holds data already; rejects when the process must not migrate. */
  gate?: MigrationGate;
  /**
   * Refuse to open while a migration step that reads depend on is pending (`MigrationStepsPendingError`): a
   * serving process's start. The admin CLI opens the store to run the steps, so it never sets this.
   */
  stepsDone?: boolean;
}

/** Throws MigrationStepsPendingError when a step that processes cannot serve without is not done. */
export async function assertStepsDone(steps: MigrationSteps): Promise<void> {
  const pending = (await steps.list()).filter((step) => !step.done && !step.servesBefore);
  if (pending.length > 0) throw new MigrationStepsPendingError(pending);
}
