import type { MigrationSteps, MigrationStepsRun } from '../port/migrations.port.js';
import { progressOf, SELECT_STEPS, type StepRow } from '../shared/migration-steps.js';
import type { Db } from './sqlite.db.js';
import { MIGRATIONS, type SqliteMigration, type SqliteMigrationStep } from './sqlite.migrations.js';

/**
 * One row per migration step recorded: the orders it must pass (ids up to `upto`, those that existed when its
 * migration was applied), how far its batches got, and when it was done. A migration applied before steps existed
 * has no row: it was done whole, at a process's start.
 */
export const MIGRATION_STEPS_TABLE = `CREATE TABLE IF NOT EXISTS migration_steps (
  version INTEGER PRIMARY KEY, name TEXT NOT NULL, position INTEGER NOT NULL, upto INTEGER NOT NULL,
  done_at INTEGER)`;

/** In the migration's transaction: its step, done at once when no order exists yet (anew if applied again). */
export function recordStep(db: Db, version: number, name: string, step: SqliteMigrationStep): void {
  const upto = Number(db.prepare('SELECT coalesce(max(order_id), 0) FROM orders').pluck().get());
  if (upto === 0) step.finish?.(db);
  db.prepare(
    'INSERT OR REPLACE INTO migration_steps (version, name, position, upto, done_at) VALUES (?, ?, ?, ?, ?)',
  ).run(version, name, 0, upto, upto === 0 ? Date.now() : null);
}

const stepOf = (version: number, migrations: readonly SqliteMigration[]) =>
  migrations.find((m) => m.version === version)?.step;

/** The steps of `admin migrate` on this file, and their progress. */
export function sqliteMigrationSteps(db: Db, migrations = MIGRATIONS): MigrationSteps {
  const rows = db.prepare<[], StepRow>(`${SELECT_STEPS} ORDER BY version`);
  const row = db.prepare<[number], StepRow>(`${SELECT_STEPS} WHERE version = ?`);
  const advance = db.prepare('UPDATE migration_steps SET position = ? WHERE version = ?');
  const finished = db.prepare('UPDATE migration_steps SET done_at = ? WHERE version = ?');
  const progress = (r: StepRow) => progressOf(r, stepOf(r.version, migrations)?.servesBefore);
  const list = () => rows.all().map(progress);

  // One batch of one step, or its finish once its batches are done: the orders passed, -1 when it finished.
  const once = db.transaction((version: number, batchSize: number): number => {
    const current = row.get(version);
    const step = stepOf(version, migrations);
    if (!current || current.done_at !== null || !step) return 0;
    if (step.batch && current.position < current.upto) {
      const to = Math.min(current.position + batchSize, current.upto);
      step.batch(db, current.position, to);
      advance.run(to, version);
      return to - current.position;
    }
    step.finish?.(db);
    finished.run(Date.now(), version);
    return -1;
  });

  return {
    async list() {
      return list();
    },
    async run({ batchSize, maxBatches = Infinity }) {
      const done: MigrationStepsRun = { batches: 0, rows: 0, steps: [] };
      for (const { version } of list().filter((s) => !s.done)) {
        for (;;) {
          if (done.batches >= maxBatches) return { ...done, steps: list() };
          const passed = once.immediate(version, batchSize);
          if (passed === 0) break;
          done.batches += 1;
          if (passed < 0) break;
          done.rows += passed;
        }
      }
      return { ...done, steps: list() };
    },
  };
}
