import type pg from 'pg';
import type { RetentionStore } from '../port/store.port.js';
import { PRUNE_CURSORS_SQL, PRUNE_DELIVERIES_SQL, PRUNE_EVENTS_SQL } from '../shared/retention.sql.js';

/** Each call one statement (its own transaction) deleting one small batch; autovacuum reuses the space. */
export function postgresRetention(pool: pg.Pool): RetentionStore {
  const prune = (sql: string) => async (before: number, limit: number) =>
    (await pool.query(sql, [before, limit])).rowCount ?? 0;
  return {
    pruneDeliveries: prune(PRUNE_DELIVERIES_SQL),
    pruneEvents: prune(PRUNE_EVENTS_SQL),
    pruneCursors: prune(PRUNE_CURSORS_SQL),
    async reclaimSpace() {
      return 0;
    },
  };
}
