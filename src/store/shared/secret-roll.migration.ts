/**
 * The schema of rolled secrets, the same on both stores (`$BIGINT` is the type of a time in ms): a client's
 * previous secret key (sealed like the current one) and a webhook's previous secret salt, each accepted or used
 * until its expiry, and the version of the current one, so that logs can say which signed a request.
 *
 * Additive only, so it runs beside the release before it: that release names the columns it reads (or, on
 * SQLite, reads them by name from `SELECT *`) and never writes these, whose defaults say "never rolled".
 */
export function secretRollSql(bigint: 'INTEGER' | 'BIGINT'): string {
  return `
    ALTER TABLE clients ADD COLUMN secret_version INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE clients ADD COLUMN previous_secret_key TEXT;
    ALTER TABLE clients ADD COLUMN previous_expires_at ${bigint};
    ALTER TABLE webhooks ADD COLUMN secret_version INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE webhooks ADD COLUMN previous_secret_salt TEXT;
    ALTER TABLE webhooks ADD COLUMN previous_expires_at ${bigint};
  `;
}

export const SECRET_ROLL_MIGRATION_NAME =
  'clients and webhooks keep their previous secret until it expires, and the version of the current one';
