import type { MigrationStepProgress } from '../port/migrations.port.js';

/** A row of `migration_steps` (both stores), as read by `SELECT_STEPS`. */
export interface StepRow {
  version: number;
  name: string;
  position: number;
  upto: number;
  done_at: number | null;
}

export const SELECT_STEPS = 'SELECT version, name, position, upto, done_at FROM migration_steps';

/**
 * A step's progress from its row; `servesBefore` from this code's migration, true for a step of a newer release
 * (its own processes check it).
 */
export const progressOf = (row: StepRow, servesBefore = true): MigrationStepProgress => ({
  version: Number(row.version),
  name: row.name,
  done: row.done_at !== null,
  servesBefore,
  position: Number(row.position),
  upto: Number(row.upto),
});
