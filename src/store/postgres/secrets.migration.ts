import { newSecretsRow, openSecrets } from '../secrets/store-secrets.js';
import type { Migration } from './postgres.migrations.js';
import { updateColumn } from './postgres.rows.js';

/**
 * Secrets at rest: the `store_secrets` row, then every client's secret key sealed and every card token
 * replaced by its keyed hash, in the migration's transaction. The columns keep their names and now hold the
 * sealed value (`secret_key`) and the hex HMAC (`token`).
 */
export const SECRETS_MIGRATION: Migration = {
  version: 3,
  name: 'secret keys sealed, card tokens hashed',
  // An earlier process reads a sealed secret key as the key itself: every signature fails.
  besideOlder: false,
  sql: `
    -- One row: which SECRETS_KEY seals this store (its key id), and the card-token hashing key sealed under it.
    CREATE TABLE store_secrets (
      id         INTEGER PRIMARY KEY CHECK (id = 1),
      key_id     TEXT    NOT NULL,
      token_key  TEXT    NOT NULL
    );
  `,
  async run(tx, { sealer }) {
    const row = newSecretsRow(sealer);
    await tx.query('INSERT INTO store_secrets (id, key_id, token_key) VALUES (1, $1, $2)', [
      row.keyId,
      row.tokenKey,
    ]);
    const { hashToken } = openSecrets(sealer, row);
    const clients = await tx.query<{ client_id: number; access_key: string; secret_key: string }>(
      'SELECT client_id, access_key, secret_key FROM clients ORDER BY client_id',
    );
    await updateColumn(
      tx,
      'clients',
      'client_id',
      'secret_key',
      clients.rows.map((c) => [c.client_id, sealer.seal(c.secret_key, c.access_key)]),
    );
    const cards = await tx.query<{ card_id: number; token: string }>(
      'SELECT card_id, token FROM cards ORDER BY card_id',
    );
    await updateColumn(
      tx,
      'cards',
      'card_id',
      'token',
      cards.rows.map((c) => [c.card_id, hashToken(c.token)]),
    );
  },
};
