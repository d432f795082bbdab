import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { MigrationSteps, MigrationStepsRun } from '../port/migrations.port.js';
import { progressOf, SELECT_STEPS, type StepRow } from '../shared/migration-steps.js';
import type { Queryable } from './postgres.pool.js';
import type { Migration, PostgresMigrationStep } from './postgres.migrations.js';

/**
 * One row per migration step recorded: the orders it must pass (ids up to `upto`, those that existed when its
 * migration was applied), how far its batches got, and when it was done. A migration applied before steps existed
 * has no row: it was done whole, at a process's start.
 */
export const MIGRATION_STEPS_TABLE = `CREATE TABLE IF NOT EXISTS migration_steps (
  version INTEGER PRIMARY KEY, name TEXT NOT NULL, position BIGINT NOT NULL, upto BIGINT NOT NULL,
  done_at BIGINT)`;

/** In the migration's transaction: its step, done at once when no order exists yet (anew if applied again). */
export async function recordStep(
  tx: Queryable,
  migration: Pick<Migration, 'version' | 'name'>,
  step: PostgresMigrationStep,
  clock: () => number,
): Promise<void> {
  const { rows } = await tx.query<{ upto: number }>(
    'SELECT coalesce(max(order_id), 0)::bigint AS upto FROM orders',
  );
  const upto = Number(rows[0]?.upto ?? 0);
  if (upto === 0) await step.finish?.(tx, false);
  await tx.query(
    `INSERT INTO migration_steps (version, name, position, upto, done_at) VALUES ($1, $2, 0, $3, $4)
     ON CONFLICT (version) DO UPDATE SET position = 0, upto = EXCLUDED.upto, done_at = EXCLUDED.done_at`,
    [migration.version, migration.name, upto, upto === 0 ? clock() : null],
  );
}

/** The turn to finish a step: the keys of an advisory lock of the two-key form, apart from the migrations' lock. */
export const FINISH_TURN_LOCK = [73012026, 1] as const;
// Its keys written into the text, not sent as parameters: a statement with parameters goes by the extended
// protocol, whose portal leaves the idle transaction holding a snapshot until its next statement, and another
// run's index build (CONCURRENTLY) waits for that snapshot while this run waits for the build's turn.
const TRY_FINISH_TURN = `SELECT pg_try_advisory_xact_lock(${FINISH_TURN_LOCK.join(', ')}) AS held`;
const FINISH_TURN_RETRY_MS = 100;
const tookTurn = async (turn: pg.PoolClient): Promise<boolean> =>
  (await turn.query<{ held: boolean }>(TRY_FINISH_TURN)).rows[0]?.held === true;

/** The steps of `admin migrate` on this database, and their progress. */
export function postgresMigrationSteps(
  pool: pg.Pool,
  migrations: readonly Migration[],
  /** Runs `fn` on a connection of its own, outside `pool`, closed after. */
  apart: <T>(fn: (own: pg.Pool) => Promise<T>) => Promise<T>,
  clock: () => number = Date.now,
): MigrationSteps {
  const stepOf = (version: number) => migrations.find((m) => m.version === version)?.step;
  const progress = (r: StepRow) => progressOf(r, stepOf(Number(r.version))?.servesBefore);
  const list = async (q: Queryable = pool) =>
    (await q.query<StepRow>(`${SELECT_STEPS} ORDER BY version`)).rows.map(progress);

  // A step's last part, outside any transaction (an index built CONCURRENTLY), by one run at a time on the
  // database: a run beside this one that comes to the same step waits, then finds it done, and two index builds on
  // `orders` never wait for each other (which PostgreSQL ends as a deadlock). The turn is a transaction-scoped
  // advisory lock on a connection apart from the pool (so a pool of one still finishes; a transaction pooler keeps
  // the lock on one server connection), tried at intervals: a run blocked inside the lock's statement would hold a
  // snapshot, which an index build waits for.
  const finish = (
    client: pg.PoolClient,
    version: number,
    step: PostgresMigrationStep,
    waiting?: (version: number) => void,
  ) =>
    apart(async (own) => {
      const turn = await own.connect();
      try {
        await turn.query('BEGIN');
        for (let tries = 0; !(await tookTurn(turn)); tries++) {
          if (tries === 0) waiting?.(version);
          await sleep(FINISH_TURN_RETRY_MS);
        }
        const current = (await client.query<StepRow>(`${SELECT_STEPS} WHERE version = $1`, [version]))
          .rows[0];
        if (!current || current.done_at !== null) return 0;
        await step.finish?.(client, true);
        await client.query('UPDATE migration_steps SET done_at = $1 WHERE version = $2 AND done_at IS NULL', [
          clock(),
          version,
        ]);
        return -1;
      } finally {
        await turn.query('ROLLBACK').catch(() => undefined);
        turn.release();
      }
    });

  // One batch of one step in its own transaction, or its finish once its batches are done: the orders passed, -1
  // when it finished, 0 when there was nothing to do.
  const once = async (
    client: pg.PoolClient,
    version: number,
    batchSize: number,
    waiting?: (version: number) => void,
  ): Promise<number> => {
    const step = stepOf(version);
    if (!step) return 0;
    await client.query('BEGIN');
    try {
      // The step's row locked: a run beside this one waits for this batch, then reads where it ended.
      const { rows } = await client.query<StepRow>(`${SELECT_STEPS} WHERE version = $1 FOR UPDATE`, [
        version,
      ]);
      const current = rows[0];
      const position = Number(current?.position);
      const upto = Number(current?.upto);
      if (current && current.done_at === null && step.batch && position < upto) {
        const to = Math.min(position + batchSize, upto);
        await step.batch(client, position, to);
        await client.query('UPDATE migration_steps SET position = $1 WHERE version = $2', [to, version]);
        await client.query('COMMIT');
        return to - position;
      }
      await client.query('COMMIT');
      if (!current || current.done_at !== null) return 0;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
    return finish(client, version, step, waiting);
  };

  return {
    list: () => list(),
    async run({ batchSize, maxBatches = Infinity, waiting }) {
      const client = await pool.connect();
      try {
        const done: MigrationStepsRun = { batches: 0, rows: 0, steps: [] };
        for (const { version } of (await list(client)).filter((s) => !s.done)) {
          for (;;) {
            if (done.batches >= maxBatches) return { ...done, steps: await list(client) };
            const passed = await once(client, version, batchSize, waiting);
            if (passed === 0) break;
            done.batches += 1;
            if (passed < 0) break;
            done.rows += passed;
          }
        }
        return { ...done, steps: await list(client) };
      } finally {
        client.release();
      }
    },
  };
}
