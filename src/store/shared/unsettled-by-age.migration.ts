/**
 * The unsettled orders by age, for reconciliation's page of stale orders (`ORDER BY created_at, order_id` after a
 * key): orders_unsettled was on (phase, created_at), which gives no single order across two phases, so each page
 * read every unsettled order and sorted them (SQLite: a temporary b-tree; PostgreSQL: a sort). On (created_at,
 * order_id) the page is a range of the index, read in order up to its limit; `phase` last keeps the counts of
 * unsettled orders (the backpressure figure, the counts by phase) on the index alone. The same SQL on both stores.
 */
export const UNSETTLED_BY_AGE_MIGRATION = {
  name: 'unsettled orders by age: reconciliation pages them in order',
  sql: `DROP INDEX orders_unsettled;
CREATE INDEX orders_unsettled ON orders (created_at, order_id, phase) WHERE phase <> 'settled';`,
};
