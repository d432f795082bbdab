import crypto from 'node:crypto';
import type { Db } from './db.js';

export interface Client {
  clientId: number;
  name: string;
  accessKey: string;
  secretKey: string;
  disabled: boolean;
}

export interface Card {
  cardId: number;
  clientId: number;
  token: string;
  declines: boolean;
  active: boolean;
}

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

const randomId = (prefix: string, bytes: number): string =>
  `${prefix}${crypto.randomBytes(bytes).toString('hex')}`;

export type ClientRepository = ReturnType<typeof createClientRepository>;

/** Clients, their keys and their sandbox cards. */
export function createClientRepository(db: Db, clock: () => number = Date.now) {
  const byAccessKey = db.prepare<[string], ClientRow>('SELECT * FROM clients WHERE access_key = ?');
  const insertClient = db.prepare(
    'INSERT INTO clients (name, access_key, secret_key, created_at) VALUES (?, ?, ?, ?) RETURNING *',
  );
  const disable = db.prepare<[string], ClientRow>(
    'UPDATE clients SET disabled = 1 WHERE access_key = ? RETURNING *',
  );
  const insertCard = db.prepare(
    'INSERT INTO cards (client_id, token, declines, created_at) VALUES (?, ?, ?, ?) RETURNING *',
  );
  const cardByToken = db.prepare<[string], CardRow>('SELECT * FROM cards WHERE token = ?');

  return {
    findByAccessKey(accessKey: string): Client | null {
      const row = byAccessKey.get(accessKey);
      return row ? toClient(row) : null;
    },
    create(name: string): Client {
      const row = insertClient.get(name, randomId('AK', 10), randomId('sk_', 32), clock()) as ClientRow;
      return toClient(row);
    },
    disable(accessKey: string): Client | null {
      const row = disable.get(accessKey);
      return row ? toClient(row) : null;
    },
    addCard(clientId: number, declines: boolean): Card {
      const row = insertCard.get(clientId, randomId('cc_', 12), declines ? 1 : 0, clock()) as CardRow;
      return toCard(row);
    },
    findCard(token: string): Card | null {
      const row = cardByToken.get(token);
      return row ? toCard(row) : null;
    },
  };
}
