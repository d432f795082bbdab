import type pg from 'pg';
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
import { withTransaction, type Queryable } from './postgres.pool.js';
import { canBeId, updateColumn } from './postgres.rows.js';

interface ClientRow {
  client_id: number;
  name: string;
  access_key: string;
  /** Sealed under SECRETS_KEY. */
  secret_key: string;
  disabled: boolean;
  secret_version: number;
  /** Sealed like secret_key; null when never rolled. */
  previous_secret_key: string | null;
  previous_expires_at: string | number | null;
}

interface CardRow {
  card_id: number;
  client_id: number;
  declines: boolean;
  active: boolean;
}

const toCard = (r: CardRow): Card => ({
  cardId: r.card_id,
  clientId: r.client_id,
  declines: r.declines,
  active: r.active,
});

const CLIENT_COLUMNS =
  'client_id, name, access_key, secret_key, disabled, secret_version, previous_secret_key, previous_expires_at';
const CARD_COLUMNS = 'card_id, client_id, declines, active';

async function readSecretsRow(db: Queryable, lock = ''): Promise<SecretsRow | undefined> {
  const sql = `SELECT key_id AS "keyId", token_key AS "tokenKey" FROM store_secrets WHERE id = 1 ${lock}`;
  return (await db.query<SecretsRow>(sql)).rows[0];
}

/** The store's secrets row, opened with the process's key (a mismatch stops the open, naming SECRETS_KEY). */
export async function openPostgresSecrets(pool: pg.Pool, sealer: Sealer): Promise<StoreSecrets> {
  return openSecrets(sealer, await readSecretsRow(pool));
}

/** Clients, their keys (sealed) and their sandbox cards (by token hash). */
export function postgresClients(pool: pg.Pool, opened: StoreSecrets): ClientStore {
  let secrets = opened;
  const toClient = (r: ClientRow): Client => ({
    clientId: r.client_id,
    name: r.name,
    accessKey: r.access_key,
    secretKey: secrets.unsealSecretKey(r.secret_key, r.access_key),
    disabled: r.disabled,
    secretVersion: r.secret_version,
    previous:
      r.previous_secret_key === null || r.previous_expires_at === null
        ? null
        : {
            secretKey: secrets.unsealSecretKey(r.previous_secret_key, r.access_key),
            expiresAt: Number(r.previous_expires_at),
          },
  });
  // FOR SHARE waits for a rotation in progress: a process left on the old key must not seal a new row.
  const sealNew = async (tx: Queryable, secretKey: string, accessKey: string): Promise<string> => {
    const { sealer } = secrets;
    const keyId = (await readSecretsRow(tx, 'FOR SHARE'))?.keyId;
    if (!sealer.opens(keyId)) throw new SecretsKeyMismatchError(sealer.keyId, keyId);
    return sealer.seal(secretKey, accessKey);
  };
  const client = async (sql: string, params: unknown[]): Promise<Client | null> => {
    const row = (await pool.query<ClientRow>(sql, params)).rows[0];
    return row ? toClient(row) : null;
  };
  const card = async (sql: string, params: unknown[]): Promise<CardRow | undefined> =>
    (await pool.query<CardRow>(sql, params)).rows[0];

  return {
    findByAccessKey(accessKey) {
      return client(`SELECT ${CLIENT_COLUMNS} FROM clients WHERE access_key = $1`, [accessKey]);
    },
    create({ name, accessKey, secretKey, now }) {
      return withTransaction(pool, async (tx) => {
        const sql = `INSERT INTO clients (name, access_key, secret_key, created_at) VALUES ($1, $2, $3, $4)
                     RETURNING client_id`;
        const sealed = await sealNew(tx, secretKey, accessKey);
        const { rows } = await tx.query<{ client_id: number }>(sql, [name, accessKey, sealed, now]);
        const clientId = rows[0]!.client_id;
        return { clientId, name, accessKey, secretKey, disabled: false, secretVersion: 1, previous: null };
      });
    },
    disable(accessKey) {
      return client(`UPDATE clients SET disabled = true WHERE access_key = $1 RETURNING ${CLIENT_COLUMNS}`, [
        accessKey,
      ]);
    },
    enable(accessKey) {
      return client(`UPDATE clients SET disabled = false WHERE access_key = $1 RETURNING ${CLIENT_COLUMNS}`, [
        accessKey,
      ]);
    },
    rollSecret({ accessKey, secretKey, previousExpiresAt }) {
      return withTransaction(pool, async (tx) => {
        const sql = `UPDATE clients SET previous_secret_key = secret_key, previous_expires_at = $1, secret_key = $2,
                            secret_version = secret_version + 1
                      WHERE access_key = $3 RETURNING ${CLIENT_COLUMNS}`;
        const sealed = await sealNew(tx, secretKey, accessKey);
        const row = (await tx.query<ClientRow>(sql, [previousExpiresAt, sealed, accessKey])).rows[0];
        return row ? toClient(row) : null;
      });
    },
    async addCard({ clientId, token, declines, now }) {
      const sql = `INSERT INTO cards (client_id, token, declines, created_at) VALUES ($1, $2, $3, $4)
                   RETURNING ${CARD_COLUMNS}`;
      const row = await card(sql, [clientId, secrets.hashToken(token), declines, now]);
      if (!row) throw new Error('INSERT … RETURNING returned no row');
      return { ...toCard(row), token };
    },
    async findCard(token) {
      const row = await card(`SELECT ${CARD_COLUMNS} FROM cards WHERE token = $1`, [
        secrets.hashToken(token),
      ]);
      return row ? toCard(row) : null;
    },
    async findCardById(cardId) {
      if (!canBeId(cardId)) return null;
      const row = await card(`SELECT ${CARD_COLUMNS} FROM cards WHERE card_id = $1`, [cardId]);
      return row ? toCard(row) : null;
    },
    async rotateSecrets(next) {
      const counts = await rotate(pool, secrets, next);
      secrets = await openPostgresSecrets(pool, next);
      return counts;
    },
    async resealSecrets(batchSize) {
      const reseal = resealer(secrets, secrets.sealer);
      let clients = 0;
      for (let after = 0; ;) {
        const batch = await resealBatch(pool, reseal, after, batchSize);
        clients += batch.resealed;
        if (batch.last === undefined) break;
        after = batch.last;
      }
      await withTransaction(pool, async (tx) => {
        const row = await readSecretsRow(tx, 'FOR UPDATE');
        if (row?.keyId === secrets.sealer.keyId) return;
        const resealed = reseal.row(row);
        await tx.query(UPDATE_SECRETS_ROW, [resealed.keyId, resealed.tokenKey]);
      });
      secrets = await openPostgresSecrets(pool, secrets.sealer);
      return { clients, cards: await countCards(pool) };
    },
  };
}

type Resealer = ReturnType<typeof resealer>;

/** The secret keys after client `after` (at most `size`) re-sealed where the previous key still seals them. */
function resealBatch(pool: pg.Pool, reseal: Resealer, after: number, size: number) {
  return withTransaction(pool, async (tx) => {
    const { rows } = await tx.query<SealedClient>(
      `SELECT ${SEALED_CLIENT_COLUMNS} FROM clients WHERE client_id > $1
       ORDER BY client_id LIMIT $2 FOR UPDATE`,
      [after, size],
    );
    const stale = rows.filter((c) => !resealedClient(reseal, c));
    await updateSealed(tx, reseal, stale);
    return { resealed: stale.length, last: rows.at(-1)?.client_id };
  });
}

/** Writes both secret keys of each client re-sealed. */
async function updateSealed(tx: pg.ClientBase, reseal: Resealer, clients: SealedClient[]): Promise<void> {
  const current: [number, string][] = [];
  const previous: [number, string][] = [];
  for (const c of clients) {
    const { secretKey, previousSecretKey } = resealClient(reseal, c);
    current.push([c.client_id, secretKey]);
    if (previousSecretKey !== null) previous.push([c.client_id, previousSecretKey]);
  }
  await updateColumn(tx, 'clients', 'client_id', 'secret_key', current);
  await updateColumn(tx, 'clients', 'client_id', 'previous_secret_key', previous);
}

const UPDATE_SECRETS_ROW = 'UPDATE store_secrets SET key_id = $1, token_key = $2 WHERE id = 1';

async function countCards(db: Queryable): Promise<number> {
  return (await db.query<{ count: number }>('SELECT count(*)::int AS count FROM cards')).rows[0]?.count ?? 0;
}

/** Re-seals every secret key and the token-hashing key under `next`, in one transaction. */
function rotate(
  pool: pg.Pool,
  current: StoreSecrets,
  next: Sealer,
): Promise<{ clients: number; cards: number }> {
  const reseal = resealer(current, next);
  return withTransaction(pool, async (tx) => {
    // Locked first: client inserts (FOR SHARE) wait, and the next statement's snapshot sees those committed.
    const row = reseal.row(await readSecretsRow(tx, 'FOR UPDATE'));
    const clients = await tx.query<SealedClient>(
      `SELECT ${SEALED_CLIENT_COLUMNS} FROM clients ORDER BY client_id FOR UPDATE`,
    );
    await updateSealed(tx, reseal, clients.rows);
    await tx.query(UPDATE_SECRETS_ROW, [row.keyId, row.tokenKey]);
    return { clients: clients.rowCount ?? 0, cards: await countCards(tx) };
  });
}
