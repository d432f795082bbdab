/**
 * Retention's statements, the same SQL on both stores (`$n` parameters, each once and in order, so that SQLite
 * takes them as `?`): each deletes
 * one small batch, oldest first, found through an index, so that a batch is a short transaction at any table size.
 */
export const PRUNE_DELIVERIES_SQL = `
  DELETE FROM webhook_deliveries WHERE delivery_id IN (
    SELECT delivery_id FROM webhook_deliveries
     WHERE state <> 'pending' AND finished_at < $1
     ORDER BY finished_at LIMIT $2)`;

// An event a delivery still names (pending, or finished inside the window) stays: deliveries go first.
export const PRUNE_EVENTS_SQL = `
  DELETE FROM order_events WHERE event_no IN (
    SELECT e.event_no FROM order_events e
     WHERE e.created_at < $1
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_no = e.event_no)
     ORDER BY e.created_at LIMIT $2)`;

/**
 * After a batch of events is pruned: the item states of their orders that no remaining event reads. `pruned` is an
 * SQL condition on `s.order_id` and `s.sequence`: the order's states up to the last sequence pruned, so the work
 * is that of the states the pruned events wrote. A state is read by its order's events from its sequence up to
 * its item's next state; an item's latest state always stays, as the next event of its order compares with it
 * (event-snapshot.ts).
 */
export const pruneItemStatesSql = (pruned: string): string => `
  DELETE FROM event_item_states AS s
   WHERE ${pruned}
     AND EXISTS (SELECT 1 FROM event_item_states n
                  WHERE n.order_id = s.order_id AND n.order_item_id = s.order_item_id AND n.sequence > s.sequence)
     AND NOT EXISTS (
       SELECT 1 FROM order_events e
        WHERE e.order_id = s.order_id AND e.sequence >= s.sequence
          AND e.sequence < (SELECT min(n.sequence) FROM event_item_states n
                             WHERE n.order_id = s.order_id AND n.order_item_id = s.order_item_id
                               AND n.sequence > s.sequence))`;

/** Each order among pruned events with the last sequence pruned of it. */
export function lastSequences(
  pruned: readonly { order_id: number; sequence: number }[],
): Map<number, number> {
  const last = new Map<number, number>();
  for (const e of pruned) last.set(e.order_id, Math.max(last.get(e.order_id) ?? 0, e.sequence));
  return last;
}

export const PRUNE_CURSORS_SQL = `
  DELETE FROM search_cursors WHERE cursor_id IN (
    SELECT cursor_id FROM search_cursors WHERE created_at < $1 ORDER BY created_at LIMIT $2)`;

/** The statement with SQLite's positional parameters (each `$n` appears once, in order). */
export const forSqlite = (sql: string): string => sql.replace(/\$\d+/g, '?');
