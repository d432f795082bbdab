import type { Card, Client, ClientStore } from '../store.port.js';
import type { Db } from './sqlite.db.js';

interface ClientRow {
  client_id: number;
  name: string;
  access_key: string;
  secret_key: string;
  disabled: number;
}

interface CardRow {
  card_id: number;
  client_id: number;
  token: string;
  declines: number;
  active: number;
}

const toClient = (r: ClientRow): Client => ({
  clientId: r.client_id,
  name: r.name,
  accessKey: r.access_key,
  secretKey: r.secret_key,
  disabled: r.disabled === 1,
});

const toCard = (r: CardRow): Card => ({
  cardId: r.card_id,
  clientId: r.client_id,
  token: r.token,
  declines: r.declines === 1,
  active: r.active === 1,
});

/** Clients, their keys and their sandbox cards. */
export function sqliteClients(db: Db): ClientStore {
  const byAccessKey = db.prepare<[string], ClientRow>('SELECT * FROM clients WHERE access_key = ?');
  const insertClient = db.prepare<[string, string, string, number], ClientRow>(
    'INSERT INTO clients (name, access_key, secret_key, created_at) VALUES (?, ?, ?, ?) RETURNING *',
  );
  const disable = db.prepare<[string], ClientRow>(
    'UPDATE clients SET disabled = 1 WHERE access_key = ? RETURNING *',
  );
  const insertCard = db.prepare<[number, string, number, number], CardRow>(
    'INSERT INTO cards (client_id, token, declines, created_at) VALUES (?, ?, ?, ?) RETURNING *',
  );
  const cardByToken = db.prepare<[string], CardRow>('SELECT * FROM cards WHERE token = ?');
  const cardById = db.prepare<[number], CardRow>('SELECT * FROM cards WHERE card_id = ?');

  return {
    async findByAccessKey(accessKey) {
      const row = byAccessKey.get(accessKey);
      return row ? toClient(row) : null;
    },
    async create({ name, accessKey, secretKey, now }) {
      return toClient(insertClient.get(name, accessKey, secretKey, now)!);
    },
    async disable(accessKey) {
      const row = disable.get(accessKey);
      return row ? toClient(row) : null;
    },
    async addCard({ clientId, token, declines, now }) {
      return toCard(insertCard.get(clientId, token, declines ? 1 : 0, now)!);
    },
    async findCard(token) {
      const row = cardByToken.get(token);
      return row ? toCard(row) : null;
    },
    async findCardById(cardId) {
      const row = cardById.get(cardId);
      return row ? toCard(row) : null;
    },
  };
}
