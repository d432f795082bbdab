/**
 * What the store says of its schema to the processes around it: the migrations a process is about to apply (so
 * that it can refuse while processes they would break are alive), and the heavy parts of migrations that an
 * operator runs apart from any process's start (`admin migrate`), in batches, resumable.
 */

/** A migration not applied yet, and whether processes that do not know it may run beside it. */
export interface PendingMigration {
  version: number;
  name: string;
  /**
   * True when processes of an earlier release keep working on the schema with it applied: it only adds what their
   * reads and writes do not see (a table, a nullable column they never read by position, an index, a trigger
   * that keeps a new column right whoever writes). False when they would misread or miswrite.
   */
  besideOlder: boolean;
}

/**
 * Asked before a process applies migrations to a store that holds data already, with those it would apply;
 * rejects (the process does not migrate) when one of them would break a process still running.
 */
export type MigrationGate = (
  kind: 'sqlite' | 'postgres',
  pending: readonly PendingMigration[],
) => Promise<void>;

/** Where a migration's heavy part stands. */
export interface MigrationStepProgress {
  version: number;
  name: string;
  /** Every batch ran and the step's last part (an index build) too. */
  done: boolean;
  /** Processes start and serve right before it is done (their reads fall back); false: they refuse to start. */
  servesBefore: boolean;
  /** The rows (orders) the step has passed, and how many it has to pass in all. */
  position: number;
  upto: number;
}

/** What one `runSteps` call did. */
export interface MigrationStepsRun {
  /** Batches run by this call, each its own short transaction. */
  batches: number;
  /** Orders passed by this call. */
  rows: number;
  steps: MigrationStepProgress[];
}

/** The heavy parts of migrations, run by the operator's `admin migrate`. */
export interface MigrationSteps {
  /** Every step this store has recorded, done or not, by version. */
  list(): Promise<MigrationStepProgress[]>;
  /**
   * Runs what remains, `batchSize` orders a transaction, at most `maxBatches` batches (all when absent), and
   * each step's last part once its batches are done. Safe beside serving processes and beside another run:
   * `waiting` is told when this run waits for another's last part of a step (an index build) before its own.
   */
  run(options: {
    batchSize: number;
    maxBatches?: number;
    waiting?: (version: number) => void;
  }): Promise<MigrationStepsRun>;
}

/** A process that cannot serve until `admin migrate` has run the steps named. */
export class MigrationStepsPendingError extends Error {
  constructor(readonly pending: readonly MigrationStepProgress[]) {
    super(
      `the store's upgrade is not finished: ${pending.map((s) => `migration ${s.version} (${s.name}) at ${s.position} of ${s.upto} orders`).join('; ')}; ` +
        'run `npm run --silent admin -- migrate` (batched, resumable, safe while the service serves), then start this process again',
    );
    this.name = 'MigrationStepsPendingError';
  }
}
