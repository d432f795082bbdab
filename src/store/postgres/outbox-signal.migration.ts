import { OUTBOX_CHANNEL } from './outbox-watch.js';
import type { Migration } from './postgres.migrations.js';

/**
 * An attempt waiting for the relay (a new delivery, or a retry recorded after a failed attempt) wakes the relays
 * (LISTEN) instead of waiting for their next poll. Statement-level triggers signal once per statement that left
 * such an attempt, whoever the writer; PostgreSQL delivers the signal at commit, once per transaction, and only to
 * sessions listening: an order of a client without webhooks costs nothing, and the relay marking attempts handed
 * over signals nothing.
 */
export const OUTBOX_SIGNAL_MIGRATION: Migration = {
  version: 12,
  name: 'attempts waiting for the relay signal it',
  besideOlder: true,
  sql: `
    CREATE FUNCTION outbox_signal() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      IF EXISTS (SELECT 1 FROM changed WHERE state = 'pending' AND enqueued_at IS NULL) THEN
        PERFORM pg_notify('${OUTBOX_CHANNEL}', '');
      END IF;
      RETURN NULL;
    END;
    $fn$;
    CREATE TRIGGER webhook_deliveries_added AFTER INSERT ON webhook_deliveries
      REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION outbox_signal();
    CREATE TRIGGER webhook_deliveries_retried AFTER UPDATE ON webhook_deliveries
      REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION outbox_signal();
  `,
};
