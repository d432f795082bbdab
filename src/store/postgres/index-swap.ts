import type { Queryable } from './postgres.pool.js';

/**
 * Builds an index of `orders` under the name `temp`, then puts it in the place of `target` (dropped when it
 * exists) under `target`'s name. `concurrently`: built without holding writers (CREATE INDEX CONCURRENTLY, outside
 * any transaction), so only the swap takes the table's lock, for a moment. A valid index already under `temp`
 * (built by an operator, or by a run interrupted before its swap) is taken as it is; an invalid one (a concurrent
 * build that failed) is built again.
 */
export async function buildAndSwapIndex(
  q: Queryable,
  index: { target: string; temp: string; on: string },
  concurrently: boolean,
): Promise<void> {
  const { rows } = await q.query<{ valid: boolean }>(
    'SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = to_regclass($1)',
    [index.temp],
  );
  if (rows[0]?.valid !== true) {
    if (rows[0]) await q.query(`DROP INDEX ${index.temp}`);
    await q.query(`CREATE INDEX ${concurrently ? 'CONCURRENTLY ' : ''}${index.temp} ${index.on}`);
  }
  // One statement string: one implicit transaction, so no moment without either index.
  await q.query(`DROP INDEX IF EXISTS ${index.target}; ALTER INDEX ${index.temp} RENAME TO ${index.target}`);
}
