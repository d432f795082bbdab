import type pg from 'pg';
import type { RetentionStore } from '../port/store.port.js';
import {
  PRUNE_CURSORS_SQL,
  PRUNE_DELIVERIES_SQL,
  PRUNE_EVENTS_SQL,
  lastSequences,
  pruneItemStatesSql,
} from '../shared/retention.sql.js';
import { withTransaction } from './postgres.pool.js';

const PRUNE_STATES_SQL = pruneItemStatesSql(`s.order_id = ANY($1::bigint[])
     AND s.sequence <= (SELECT p.up_to FROM unnest($1::bigint[], $2::int[]) AS p(order_id, up_to)
                         WHERE p.order_id = s.order_id)`);

/** Each call one short transaction deleting one small batch; autovacuum reuses the space. */
export function postgresRetention(pool: pg.Pool): RetentionStore {
  const prune = (sql: string) => async (before: number, limit: number) =>
    (await pool.query(sql, [before, limit])).rowCount ?? 0;
  return {
    pruneDeliveries: prune(PRUNE_DELIVERIES_SQL),
    // The events, then in the same transaction the item states only they read.
    pruneEvents: (before, limit) =>
      withTransaction(pool, async (tx) => {
        const { rows } = await tx.query<{ order_id: number; sequence: number }>(
          `${PRUNE_EVENTS_SQL} RETURNING order_id, sequence`,
          [before, limit],
        );
        const last = lastSequences(rows);
        if (last.size > 0) await tx.query(PRUNE_STATES_SQL, [[...last.keys()], [...last.values()]]);
        return rows.length;
      }),
    pruneCursors: prune(PRUNE_CURSORS_SQL),
    async reclaimSpace() {
      return 0;
    },
  };
}
