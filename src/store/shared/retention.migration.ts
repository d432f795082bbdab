/**
 * The indexes retention's batches need (retention.sql.ts): finished deliveries by age, events by age, and
 * deliveries by event (without it, each event deleted would scan the deliveries, for NOT EXISTS and for the
 * foreign key's check). The same SQL on both stores.
 */
export const RETENTION_MIGRATION = {
  name: 'retention: indexes to prune events and finished deliveries by age',
  sql: `
    CREATE INDEX IF NOT EXISTS webhook_deliveries_event ON webhook_deliveries (event_no);
    CREATE INDEX IF NOT EXISTS webhook_deliveries_finished ON webhook_deliveries (finished_at)
      WHERE state <> 'pending';
    CREATE INDEX IF NOT EXISTS order_events_created ON order_events (created_at);
  `,
};
