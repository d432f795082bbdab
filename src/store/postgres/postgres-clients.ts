import type pg from 'pg';
import type { Card, Client, ClientStore } from '../store.port.js';
import { canBeId } from './postgres.rows.js';

interface ClientRow {
  client_id: number;
  name: string;
  access_key: string;
  secret_key: string;
  disabled: boolean;
}

interface CardRow {
  card_id: number;
  client_id: number;
  token: string;
  declines: boolean;
  active: boolean;
}

const toClient = (r: ClientRow): Client => ({
  clientId: r.client_id,
  name: r.name,
  accessKey: r.access_key,
  secretKey: r.secret_key,
  disabled: r.disabled,
});

const toCard = (r: CardRow): Card => ({
  cardId: r.card_id,
  clientId: r.client_id,
  token: r.token,
  declines: r.declines,
  active: r.active,
});

const CLIENT_COLUMNS = 'client_id, name, access_key, secret_key, disabled';
const CARD_COLUMNS = 'card_id, client_id, token, declines, active';

/** Clients, their keys and their sandbox cards. */
export function postgresClients(pool: pg.Pool): ClientStore {
  const client = async (sql: string, params: unknown[]): Promise<Client | null> => {
    const row = (await pool.query<ClientRow>(sql, params)).rows[0];
    return row ? toClient(row) : null;
  };
  const card = async (sql: string, params: unknown[]): Promise<Card | null> => {
    const row = (await pool.query<CardRow>(sql, params)).rows[0];
    return row ? toCard(row) : null;
  };
  const created = <T>(row: T | null): T => {
    if (!row) throw new Error('INSERT … RETURNING returned no row');
    return row;
  };

  return {
    findByAccessKey(accessKey) {
      return client(`SELECT ${CLIENT_COLUMNS} FROM clients WHERE access_key = $1`, [accessKey]);
    },
    async create({ name, accessKey, secretKey, now }) {
      const sql = `INSERT INTO clients (name, access_key, secret_key, created_at) VALUES ($1, $2, $3, $4)
                   RETURNING ${CLIENT_COLUMNS}`;
      return created(await client(sql, [name, accessKey, secretKey, now]));
    },
    disable(accessKey) {
      return client(`UPDATE clients SET disabled = true WHERE access_key = $1 RETURNING ${CLIENT_COLUMNS}`, [
        accessKey,
      ]);
    },
    async addCard({ clientId, token, declines, now }) {
      const sql = `INSERT INTO cards (client_id, token, declines, created_at) VALUES ($1, $2, $3, $4)
                   RETURNING ${CARD_COLUMNS}`;
      return created(await card(sql, [clientId, token, declines, now]));
    },
    findCard(token) {
      return card(`SELECT ${CARD_COLUMNS} FROM cards WHERE token = $1`, [token]);
    },
    async findCardById(cardId) {
      if (!canBeId(cardId)) return null;
      return card(`SELECT ${CARD_COLUMNS} FROM cards WHERE card_id = $1`, [cardId]);
    },
  };
}
