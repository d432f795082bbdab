/** Part of the store port (../store.port.ts): clients and their cards. */
import type { Sealer } from '../../domain/secrets.js';

export interface Client {
  clientId: number;
  name: string;
  accessKey: string;
  secretKey: string;
  disabled: boolean;
  /** 1 for the secret key the client was made with, one more for each roll. */
  secretVersion: number;
  /** The secret key before the last roll (version `secretVersion - 1`) while it is still accepted. */
  previous: PreviousSecret | null;
}

/** A rolled-away secret and when it stops being accepted (ms). */
export interface PreviousSecret {
  secretKey: string;
  expiresAt: number;
}

/** A stored card: the store keeps only a keyed hash of its token, so it never gives the token back. */
export interface Card {
  cardId: number;
  clientId: number;
  declines: boolean;
  active: boolean;
}

/** A card just added, with its token in clear this once. */
export interface NewCard extends Card {
  token: string;
}

/**
 * Clients and cards. Secret keys are stored sealed under SECRETS_KEY and card tokens as keyed hashes; the
 * port takes and gives them in clear.
 */
export interface ClientStore {
  findByAccessKey(accessKey: string): Promise<Client | null>;
  /** Stores a client with the keys the caller generated. */
  create(client: { name: string; accessKey: string; secretKey: string; now: number }): Promise<Client>;
  /** The client after disabling it; null when no client has that key. */
  disable(accessKey: string): Promise<Client | null>;
  /** The client after enabling it again; null when no client has that key. */
  enable(accessKey: string): Promise<Client | null>;
  /**
   * Makes `secretKey` the client's secret key (sealed like the first) and keeps the one it replaces until
   * `previousExpiresAt`; a previous secret still unexpired is dropped. Null when no client has that key.
   */
  rollSecret(roll: {
    accessKey: string;
    secretKey: string;
    previousExpiresAt: number;
  }): Promise<Client | null>;
  addCard(card: { clientId: number; token: string; declines: boolean; now: number }): Promise<NewCard>;
  findCard(token: string): Promise<Card | null>;
  findCardById(cardId: number): Promise<Card | null>;
  /**
   * Re-seals every secret key (and the token-hashing key) under `next` in one transaction. This store is
   * under `next` afterwards; other processes must restart with it.
   */
  rotateSecrets(next: Sealer): Promise<{ clients: number; cards: number }>;
  /**
   * Re-seals under this process's SECRETS_KEY what SECRETS_KEY_PREVIOUS still seals: secret keys in
   * transactions of at most `batchSize` clients (processes on either key keep serving), the token-hashing key
   * last. `clients` counts the secret keys re-sealed; run again, it re-seals nothing.
   */
  resealSecrets(batchSize: number): Promise<{ clients: number; cards: number }>;
}
