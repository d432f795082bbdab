// The store and the heartbeats as the release of 2026-11-27 (ab69f1c) left them, made from a store this code
// migrated: for the tests of an upgrade from it (its SQLite schema is 13, its PostgreSQL schema 14).
import { keyOf } from '../../src/metrics/process-heartbeat.js';
import type { RedisClient } from '../../src/redis/redis.js';
import type { Probe } from './store.probe.js';
import { TEST_STORE } from './test-store.js';

/** What that release's schema did not have yet, taken off. */
const TO_THE_RELEASE_BEFORE =
  TEST_STORE === 'postgres'
    ? `DROP TRIGGER order_items_updated ON order_items; DROP FUNCTION bo_order_items_updated();
       DROP INDEX orders_client_items_updated; ALTER TABLE orders DROP COLUMN items_updated_at;
       DROP INDEX orders_unsettled_client; ALTER TABLE orders DROP COLUMN item_count;
       CREATE INDEX orders_unsettled_client ON orders (client_id) WHERE NOT settled;
       DROP TABLE event_item_states; DROP TABLE migration_steps;
       DELETE FROM schema_migrations WHERE version >= 15;`
    : `DROP TRIGGER order_items_updated; DROP INDEX orders_client_items_updated;
       ALTER TABLE orders DROP COLUMN items_updated_at;
       DROP INDEX orders_unsettled_client; ALTER TABLE orders DROP COLUMN item_count;
       CREATE INDEX orders_unsettled_client ON orders (client_id) WHERE phase <> 'settled';
       DROP TABLE event_item_states; DROP TABLE migration_steps;
       DELETE FROM schema_migrations WHERE version >= 14;`;

/** Takes the store back to the schema of the release of 2026-11-27, its rows kept. */
export const toTheReleaseBefore = (probe: Probe): Promise<void> => probe.exec(TO_THE_RELEASE_BEFORE);

/** A heartbeat as that release writes it (no `release`), fresh by Redis's clock, under `field` (`role:pid`). */
export async function beatOfTheReleaseBefore(
  redis: RedisClient,
  prefix: string,
  field: string,
): Promise<void> {
  const [seconds] = await redis.time();
  const beat = { rss: 1, heapUsed: 1, cpuSeconds: 0, startedAt: 0, at: Number(seconds) * 1000 };
  await redis.hset(keyOf(prefix), field, JSON.stringify(beat));
}
