/**
 * Retention (docs/api.md#operations): what the clock deletes, a small batch per call, each call one short
 * transaction. Orders, items, the ledger and payments are never deleted; nothing here reaches them.
 */
export interface RetentionStore {
  /** Deletes up to `limit` webhook deliveries finished (delivered, failed, dropped) before `before`; a pending one never. */
  pruneDeliveries(before: number, limit: number): Promise<number>;
  /** Deletes up to `limit` order events created before `before` that no delivery row still refers to. */
  pruneEvents(before: number, limit: number): Promise<number>;
  /** Deletes up to `limit` search cursors issued before `before` (expired). */
  pruneCursors(before: number, limit: number): Promise<number>;
  /**
   * Gives up to `pages` free pages back to the file system (SQLite: `incremental_vacuum`); how many it gave.
   * PostgreSQL: 0 (autovacuum makes dead rows' space reusable).
   */
  reclaimSpace(pages: number): Promise<number>;
}
