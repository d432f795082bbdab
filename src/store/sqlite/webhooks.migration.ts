import type { SqliteMigration } from './sqlite.migrations.js';

/**
 * Order events and webhooks: a per-order event counter, the events with the order as it stood after each
 * change, the webhooks (their secrets derived, never stored), and one delivery row per event and webhook:
 * the outbox the relay hands to the queue.
 */
export const WEBHOOKS_MIGRATION: SqliteMigration = {
  version: 6,
  name: 'order events, webhooks and their delivery outbox',
  // An earlier process changes orders without recording their events: webhooks would miss them.
  besideOlder: false,
  sql: `
    ALTER TABLE orders ADD COLUMN event_seq INTEGER NOT NULL DEFAULT 0;

    CREATE TABLE webhooks (
      webhook_id   INTEGER PRIMARY KEY,
      client_id    INTEGER NOT NULL REFERENCES clients (client_id),
      url          TEXT    NOT NULL,
      -- The secret is an HMAC of this salt under the store's token-hashing key: nothing secret is kept here.
      secret_salt  TEXT    NOT NULL,
      active       INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
      failing      INTEGER NOT NULL DEFAULT 0 CHECK (failing IN (0, 1)),
      created_at   INTEGER NOT NULL
    );
    CREATE INDEX webhooks_client ON webhooks (client_id);

    -- event_id is the public evt_… id; snapshot is the order as GET showed it right after the change (from version
    -- 16 on, only the order's own fields: its items are in event_item_states, event-snapshot.ts).
    CREATE TABLE order_events (
      event_no    INTEGER PRIMARY KEY,
      event_id    TEXT    NOT NULL UNIQUE,
      client_id   INTEGER NOT NULL,
      order_id    INTEGER NOT NULL REFERENCES orders (order_id),
      sequence    INTEGER NOT NULL,
      created_at  INTEGER NOT NULL,
      snapshot    TEXT    NOT NULL,
      UNIQUE (order_id, sequence)
    );
    CREATE INDEX order_events_client_created ON order_events (client_id, created_at);

    -- next_attempt_at: when the next attempt is due (0: at once, a first attempt); enqueued_at: when the relay
    -- handed that attempt to the queue, null until it has.
    CREATE TABLE webhook_deliveries (
      delivery_id      INTEGER PRIMARY KEY,
      event_no         INTEGER NOT NULL REFERENCES order_events (event_no),
      webhook_id       INTEGER NOT NULL REFERENCES webhooks (webhook_id),
      state            TEXT    NOT NULL DEFAULT 'pending'
                         CHECK (state IN ('pending', 'delivered', 'failed', 'dropped')),
      attempts         INTEGER NOT NULL DEFAULT 0,
      next_attempt_at  INTEGER NOT NULL,
      enqueued_at      INTEGER,
      last_error       TEXT,
      created_at       INTEGER NOT NULL,
      finished_at      INTEGER
    );
    CREATE INDEX webhook_deliveries_unenqueued ON webhook_deliveries (delivery_id)
      WHERE state = 'pending' AND enqueued_at IS NULL;
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
    CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id) WHERE state = 'pending';
  `,
};
