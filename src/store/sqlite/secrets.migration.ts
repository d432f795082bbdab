import { newSecretsRow, openSecrets } from '../secrets/store-secrets.js';
import type { SqliteMigration } from './sqlite.migrations.js';

/**
 * Secrets at rest: the `store_secrets` row, then every client's secret key sealed and every card token
 * replaced by its keyed hash, in the migration's transaction. The columns keep their names and now hold the
 * sealed value (`secret_key`) and the hex HMAC (`token`).
 */
export const SECRETS_MIGRATION: SqliteMigration = {
  version: 5,
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
  run(db, { sealer }) {
    const row = newSecretsRow(sealer);
    db.prepare('INSERT INTO store_secrets (id, key_id, token_key) VALUES (1, ?, ?)').run(
      row.keyId,
      row.tokenKey,
    );
    const { hashToken } = openSecrets(sealer, row);
    const clients = db
      .prepare<[], { client_id: number; access_key: string; secret_key: string }>(
        'SELECT client_id, access_key, secret_key FROM clients',
      )
      .all();
    const seal = db.prepare('UPDATE clients SET secret_key = ? WHERE client_id = ?');
    for (const c of clients) seal.run(sealer.seal(c.secret_key, c.access_key), c.client_id);
    const cards = db
      .prepare<[], { card_id: number; token: string }>('SELECT card_id, token FROM cards')
      .all();
    const hash = db.prepare('UPDATE cards SET token = ? WHERE card_id = ?');
    for (const c of cards) hash.run(hashToken(c.token), c.card_id);
  },
};
