import { buildAndSwapIndex } from './index-swap.js';
import type { Migration } from './postgres.migrations.js';

/**
 * The backlog counts items, so that an order of many items weighs what as many one-item orders weigh: each
 * order keeps how many items it was accepted with, written by its acceptance's statement, and the partial
 * index of unsettled orders by client carries it (`INCLUDE`), so that both backpressure figures (the
 * service's, a client's) are sums over that index alone (index-only scans); `order_id` in it lets an order
 * without a count find its items. Null on an order accepted by an older version: the counts take its items
 * from order_items instead, and `backfillItemCounts` (item-counts.postgres.ts) fills the unsettled ones after
 * the migration, a batch per statement (settled orders are never counted: they keep null). Adding a column
 * without a default is instant; the index, a scan of `orders`, is a step of `admin migrate`, built
 * CONCURRENTLY. The count never changes after acceptance, so a reservation's update stays heap-only
 * (unsettled-apart.migration.ts).
 */
export const UNSETTLED_ITEMS_MIGRATION: Migration = {
  version: 16,
  name: 'orders keep their item count: the backlog counts items',
  // Earlier processes read orders by name: a new column is invisible to them, and they accept orders without a
  // count, whose items the counts read from order_items.
  besideOlder: true,
  sql: 'ALTER TABLE orders ADD COLUMN item_count INTEGER;',
  step: {
    // Until the index is rebuilt, the counts read the index of migration 14 and each order's row: right, slower.
    servesBefore: true,
    finish: (q, concurrently) =>
      buildAndSwapIndex(
        q,
        {
          target: 'orders_unsettled_client',
          temp: 'orders_unsettled_client_items',
          on: 'ON orders (client_id) INCLUDE (order_id, item_count) WHERE NOT settled',
        },
        concurrently,
      ),
  },
};
