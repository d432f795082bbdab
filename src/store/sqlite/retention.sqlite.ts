import type { RetentionStore } from '../port/store.port.js';
import {
  PRUNE_CURSORS_SQL,
  PRUNE_DELIVERIES_SQL,
  PRUNE_EVENTS_SQL,
  forSqlite,
  lastSequences,
  pruneItemStatesSql,
} from '../shared/retention.sql.js';
import type { Db } from './sqlite.db.js';

/** Each call one `BEGIN IMMEDIATE` transaction of one small batch; the file gives free pages back on request. */
export function sqliteRetention(db: Db): RetentionStore {
  const prune = (sql: string) => {
    const statement = db.prepare<[number, number]>(forSqlite(sql));
    const run = db.transaction((before: number, limit: number) => statement.run(before, limit).changes);
    return async (before: number, limit: number) => run.immediate(before, limit);
  };
  const pruneEvents = db.prepare<[number, number], { order_id: number; sequence: number }>(
    `${forSqlite(PRUNE_EVENTS_SQL)} RETURNING order_id, sequence`,
  );
  const pruneStates = db.prepare<[number, number]>(pruneItemStatesSql('s.order_id = ? AND s.sequence <= ?'));
  // The events, then in the same transaction the item states only they read.
  const events = db.transaction((before: number, limit: number) => {
    const pruned = pruneEvents.all(before, limit);
    for (const [orderId, upTo] of lastSequences(pruned)) pruneStates.run(orderId, upTo);
    return pruned.length;
  });
  const freePages = db.prepare<[], number>('PRAGMA freelist_count').pluck();
  return {
    pruneDeliveries: prune(PRUNE_DELIVERIES_SQL),
    pruneEvents: async (before, limit) => events.immediate(before, limit),
    pruneCursors: prune(PRUNE_CURSORS_SQL),
    // auto_vacuum = INCREMENTAL (sqlite.db.ts): free pages stay in the file, reused by new rows, until this
    // moves up to `pages` of them to its end and truncates it.
    async reclaimSpace(pages) {
      const before = freePages.get() ?? 0;
      if (before === 0) return 0;
      db.pragma(`incremental_vacuum(${Math.max(1, Math.trunc(pages))})`);
      return before - (freePages.get() ?? 0);
    },
  };
}
