import { setImmediate } from 'node:timers/promises';
import type { Sealer } from '../../domain/secrets.js';
import {
  openSecrets,
  resealer,
  SecretsKeyMismatchError,
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
  });
  const byAccessKey = db.prepare<[string], ClientRow>('SELECT * FROM clients WHERE access_key = ?');
  const storeKeyId = db.prepare<[], string>('SELECT key_id FROM store_secrets WHERE id = 1').pluck();
  const insertClient = db.prepare<[string, string, string, number], { client_id: number }>(
    'INSERT INTO clients (name, access_key, secret_key, created_at) VALUES (?, ?, ?, ?) RETURNING client_id',
  );
  const disable = db.prepare<[string], ClientRow>(
    'UPDATE clients SET disabled = 1 WHERE access_key = ? RETURNING *',
  );
  const insertCard = db.prepare<[number, string, number, number], CardRow>(
    `INSERT INTO cards (client_id, token, declines, created_at) VALUES (?, ?, ?, ?) RETURNING ${CARD_COLUMNS}`,
  );
  const cardByToken = db.prepare<[string], CardRow>(`SELECT ${CARD_COLUMNS} FROM cards WHERE token = ?`);
  const cardById = db.prepare<[number], CardRow>(`SELECT ${CARD_COLUMNS} FROM cards WHERE card_id = ?`);
  const updateSecretsRow = db.prepare<[string, string]>(UPDATE_SECRETS_ROW);
  const countCards = db.prepare<[], number>(COUNT_CARDS).pluck();
  // Checked in the writing transaction: a process left on a rotated-away key must not seal a new row with it.
  const create = db.transaction((name: string, accessKey: string, secretKey: string, now: number) => {
    const keyId = storeKeyId.get();
    if (!secrets.sealer.opens(keyId)) throw new SecretsKeyMismatchError(secrets.sealer.keyId, keyId);
    return insertClient.get(name, accessKey, secrets.sealer.seal(secretKey, accessKey), now)!.client_id;
  });

  return {
    async findByAccessKey(accessKey) {
      const row = byAccessKey.get(accessKey);
      return row ? toClient(row) : null;
    },
    async create({ name, accessKey, secretKey, now }) {
      const clientId = create.immediate(name, accessKey, secretKey, now);
      return { clientId, name, accessKey, secretKey, disabled: false };
    },
    async disable(accessKey) {
      const row = disable.get(accessKey);
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

/** The secret keys after client `after` (at most `size`) re-sealed where the previous key still seals them. */
function resealBatch(db: Db, reseal: Resealer, after: number, size: number) {
  return db
    .transaction(() => {
      const rows = db
        .prepare<[number, number], Pick<ClientRow, 'client_id' | 'access_key' | 'secret_key'>>(
          'SELECT client_id, access_key, secret_key FROM clients WHERE client_id > ? ORDER BY client_id LIMIT ?',
        )
        .all(after, size);
      const stale = rows.filter((c) => !reseal.isCurrent(c.secret_key, c.access_key));
      const update = db.prepare('UPDATE clients SET secret_key = ? WHERE client_id = ?');
      for (const c of stale) update.run(reseal.secretKey(c.secret_key, c.access_key), c.client_id);
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
      const clients = db
        .prepare<[], Pick<ClientRow, 'client_id' | 'access_key' | 'secret_key'>>(
          'SELECT client_id, access_key, secret_key FROM clients',
        )
        .all();
      const update = db.prepare('UPDATE clients SET secret_key = ? WHERE client_id = ?');
      for (const c of clients) update.run(reseal.secretKey(c.secret_key, c.access_key), c.client_id);
      const cards = db.prepare<[], number>(COUNT_CARDS).pluck().get() ?? 0;
      return { clients: clients.length, cards };
    })
    .immediate();
}
