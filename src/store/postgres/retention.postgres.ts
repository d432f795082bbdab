import type pg from 'pg';
import type { RetentionStore } from '../port/store.port.js';
import {
  PRUNE_CURSORS_SQL,
  PRUNE_DELIVERIES_SQL,
  PRUNE_EVENTS_SQL,
  pruneItemStatesSql,
} from '../shared/retention.sql.js';
import { withTransaction } from './postgres.pool.js';

const PRUNE_STATES_SQL = pruneItemStatesSql('s.order_id = ANY($1::bigint[])');

/** Each call one short transaction deleting one small batch; autovacuum reuses the space. */
export function postgresRetention(pool: pg.Pool): RetentionStore {
  const prune = (sql: string) => async (before: number, limit: number) =>
    (await pool.query(sql, [before, limit])).rowCount ?? 0;
  return {
    pruneDeliveries: prune(PRUNE_DELIVERIES_SQL),
    // The events, then in the same transaction the item states only they read.
    pruneEvents: (before, limit) =>
      withTransaction(pool, async (tx) => {
        const { rows } = await tx.query<{ order_id: number }>(`${PRUNE_EVENTS_SQL} RETURNING order_id`, [
          before,
          limit,
        ]);
        if (rows.length > 0) await tx.query(PRUNE_STATES_SQL, [[...new Set(rows.map((r) => r.order_id))]]);
        return rows.length;
      }),
    pruneCursors: prune(PRUNE_CURSORS_SQL),
    async reclaimSpace() {
      return 0;
    },
  };
}
