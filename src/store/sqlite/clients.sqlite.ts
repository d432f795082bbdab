import { setImmediate } from 'node:timers/promises';
import type { Sealer } from '../../domain/secrets.js';
import {
  openSecrets,
  resealClient,
  resealedClient,
  resealer,
  SEALED_CLIENT_COLUMNS,
  SecretsKeyMismatchError,
  type SealedClient,
  type SecretsRow,
  type StoreSecrets,
} from '../secrets/store-secrets.js';
import type { Card, Client, ClientStore } from '../port/store.port.js';
import { truncateWal, type Db } from './sqlite.db.js';

interface ClientRow {
  client_id: number;
  name: string;
  access_key: string;
  /** Sealed under SECRETS_KEY. */
  secret_key: string;
  disabled: number;
  secret_version: number;
  /** Sealed like secret_key; null when never rolled. */
  previous_secret_key: string | null;
  previous_expires_at: number | null;
}

interface CardRow {
  card_id: number;
  client_id: number;
  declines: number;
  active: number;
}

const toCard = (r: CardRow): Card => ({
  cardId: r.card_id,
  clientId: r.client_id,
  declines: r.declines === 1,
  active: r.active === 1,
});

const CLIENT_COLUMNS =
  'client_id, name, access_key, secret_key, disabled, secret_version, previous_secret_key, previous_expires_at';
const CARD_COLUMNS = 'card_id, client_id, declines, active';
const UPDATE_SECRETS_ROW = 'UPDATE store_secrets SET key_id = ?, token_key = ? WHERE id = 1';
const COUNT_CARDS = 'SELECT count(*) FROM cards';

/** The store's secrets row, opened with the process's key (a mismatch stops the open, naming SECRETS_KEY). */
export function openSqliteSecrets(db: Db, sealer: Sealer): StoreSecrets {
  return openSecrets(sealer, readSecretsRow(db));
}

function readSecretsRow(db: Db): SecretsRow | undefined {
  return db
    .prepare<[], SecretsRow>('SELECT key_id AS keyId, token_key AS tokenKey FROM store_secrets WHERE id = 1')
    .get();
}

/** Clients, their keys (sealed) and their sandbox cards (by token hash). */
export function sqliteClients(db: Db, opened: StoreSecrets): ClientStore {
  let secrets = opened;
  const toClient = (r: ClientRow): Client => ({
    clientId: r.client_id,
    name: r.name,
    accessKey: r.access_key,
    secretKey: secrets.unsealSecretKey(r.secret_key, r.access_key),
    disabled: r.disabled === 1,
    secretVersion: r.secret_version,
    previous:
      r.previous_secret_key === null || r.previous_expires_at === null
        ? null
        : {
            secretKey: secrets.unsealSecretKey(r.previous_secret_key, r.access_key),
            expiresAt: r.previous_expires_at,
          },
  });
  const byAccessKey = db.prepare<[string], ClientRow>(
    `SELECT ${CLIENT_COLUMNS} FROM clients WHERE access_key = ?`,
  );
  const storeKeyId = db.prepare<[], string>('SELECT key_id FROM store_secrets WHERE id = 1').pluck();
  const insertClient = db.prepare<[string, string, string, number], { client_id: number }>(
    'INSERT INTO clients (name, access_key, secret_key, created_at) VALUES (?, ?, ?, ?) RETURNING client_id',
  );
  const setDisabled = db.prepare<[number, string], ClientRow>(
    `UPDATE clients SET disabled = ? WHERE access_key = ? RETURNING ${CLIENT_COLUMNS}`,
  );
  const roll = db.prepare<[number, string, string], ClientRow>(
    `UPDATE clients SET previous_secret_key = secret_key, previous_expires_at = ?, secret_key = ?,
                        secret_version = secret_version + 1
      WHERE access_key = ? RETURNING ${CLIENT_COLUMNS}`,
  );
  const insertCard = db.prepare<[number, string, number, number], CardRow>(
    `INSERT INTO cards (client_id, token, declines, created_at) VALUES (?, ?, ?, ?) RETURNING ${CARD_COLUMNS}`,
  );
  const cardByToken = db.prepare<[string], CardRow>(`SELECT ${CARD_COLUMNS} FROM cards WHERE token = ?`);
  const cardById = db.prepare<[number], CardRow>(`SELECT ${CARD_COLUMNS} FROM cards WHERE card_id = ?`);
  const updateSecretsRow = db.prepare<[string, string]>(UPDATE_SECRETS_ROW);
  const countCards = db.prepare<[], number>(COUNT_CARDS).pluck();
  // Checked in the writing transaction: a process left on a rotated-away key must not seal a new row with it.
  const sealNew = (secretKey: string, accessKey: string): string => {
    const keyId = storeKeyId.get();
    if (!secrets.sealer.opens(keyId)) throw new SecretsKeyMismatchError(secrets.sealer.keyId, keyId);
    return secrets.sealer.seal(secretKey, accessKey);
  };
  const create = db.transaction(
    (name: string, accessKey: string, secretKey: string, now: number) =>
      insertClient.get(name, accessKey, sealNew(secretKey, accessKey), now)!.client_id,
  );
  const rollSecret = db.transaction((accessKey: string, secretKey: string, previousExpiresAt: number) =>
    roll.get(previousExpiresAt, sealNew(secretKey, accessKey), accessKey),
  );

  return {
    async findByAccessKey(accessKey) {
      const row = byAccessKey.get(accessKey);
      return row ? toClient(row) : null;
    },
    async create({ name, accessKey, secretKey, now }) {
      const clientId = create.immediate(name, accessKey, secretKey, now);
      return { clientId, name, accessKey, secretKey, disabled: false, secretVersion: 1, previous: null };
    },
    async disable(accessKey) {
      const row = setDisabled.get(1, accessKey);
      return row ? toClient(row) : null;
    },
    async enable(accessKey) {
      const row = setDisabled.get(0, accessKey);
      return row ? toClient(row) : null;
    },
    async rollSecret({ accessKey, secretKey, previousExpiresAt }) {
      const row = rollSecret.immediate(accessKey, secretKey, previousExpiresAt);
      return row ? toClient(row) : null;
    },
    async addCard({ clientId, token, declines, now }) {
      return { ...toCard(insertCard.get(clientId, secrets.hashToken(token), declines ? 1 : 0, now)!), token };
    },
    async findCard(token) {
      const row = cardByToken.get(secrets.hashToken(token));
      return row ? toCard(row) : null;
    },
    async findCardById(cardId) {
      const row = cardById.get(cardId);
      return row ? toCard(row) : null;
    },
    async rotateSecrets(next) {
      const counts = rotate(db, secrets, next);
      secrets = openSecrets(next, readSecretsRow(db));
      truncateWal(db);
      return counts;
    },
    async resealSecrets(batchSize) {
      const reseal = resealer(secrets, secrets.sealer);
      let clients = 0;
      for (let after = 0; ; await setImmediate()) {
        const batch = resealBatch(db, reseal, after, batchSize);
        clients += batch.resealed;
        if (batch.last === undefined) break;
        after = batch.last;
      }
      db.transaction(() => {
        const row = readSecretsRow(db);
        if (row?.keyId === secrets.sealer.keyId) return;
        const resealed = reseal.row(row);
        updateSecretsRow.run(resealed.keyId, resealed.tokenKey);
      }).immediate();
      secrets = openSecrets(secrets.sealer, readSecretsRow(db));
      truncateWal(db);
      return { clients, cards: countCards.get() ?? 0 };
    },
  };
}

type Resealer = ReturnType<typeof resealer>;
const RESEAL_CLIENT = 'UPDATE clients SET secret_key = ?, previous_secret_key = ? WHERE client_id = ?';

/** The parameters of RESEAL_CLIENT: both secret keys re-sealed. */
const resealParams = (reseal: Resealer, c: SealedClient): [string, string | null, number] => {
  const { secretKey, previousSecretKey } = resealClient(reseal, c);
  return [secretKey, previousSecretKey, c.client_id];
};

/** The secret keys after client `after` (at most `size`) re-sealed where the previous key still seals them. */
function resealBatch(db: Db, reseal: Resealer, after: number, size: number) {
  return db
    .transaction(() => {
      const rows = db
        .prepare<[number, number], SealedClient>(
          `SELECT ${SEALED_CLIENT_COLUMNS} FROM clients WHERE client_id > ? ORDER BY client_id LIMIT ?`,
        )
        .all(after, size);
      const stale = rows.filter((c) => !resealedClient(reseal, c));
      const update = db.prepare(RESEAL_CLIENT);
      for (const c of stale) update.run(...resealParams(reseal, c));
      return { resealed: stale.length, last: rows.at(-1)?.client_id };
    })
    .immediate();
}

/** Re-seals every secret key and the token-hashing key under `next`, in one `BEGIN IMMEDIATE` transaction. */
function rotate(db: Db, current: StoreSecrets, next: Sealer): { clients: number; cards: number } {
  const reseal = resealer(current, next);
  return db
    .transaction(() => {
      const row = reseal.row(readSecretsRow(db));
      db.prepare(UPDATE_SECRETS_ROW).run(row.keyId, row.tokenKey);
      const clients = db.prepare<[], SealedClient>(`SELECT ${SEALED_CLIENT_COLUMNS} FROM clients`).all();
      const update = db.prepare(RESEAL_CLIENT);
      for (const c of clients) update.run(...resealParams(reseal, c));
      const cards = db.prepare<[], number>(COUNT_CARDS).pluck().get() ?? 0;
      return { clients: clients.length, cards };
    })
    .immediate();
}
