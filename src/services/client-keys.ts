import crypto from 'node:crypto';
import type { Client, ClientStore, NewCard } from '../store/port/store.port.js';

const randomId = (prefix: string, bytes: number): string =>
  `${prefix}${crypto.randomBytes(bytes).toString('hex')}`;

/** A new API client with a fresh access key (public) and secret key (the HMAC key of its signatures). */
export function createClient(clients: ClientStore, name: string, now: number): Promise<Client> {
  return clients.create({ name, accessKey: randomId('AK', 10), secretKey: randomId('sk_', 32), now });
}

/**
 * A sandbox card for a client, under a fresh random token; `declines` makes every authorisation fail. The
 * token is in the result this once: the store keeps only its hash.
 */
export function addCard(
  clients: ClientStore,
  clientId: number,
  declines: boolean,
  now: number,
): Promise<NewCard> {
  return clients.addCard({ clientId, token: randomId('cc_', 12), declines, now });
}

/** How long a rolled-away secret is accepted when the operator does not say, and at most. */
export const ROLL_OVERLAP_DEFAULT_MS = 24 * 3600_000;
export const ROLL_OVERLAP_MAX_MS = 7 * 24 * 3600_000;

/**
 * A fresh secret key for the client at once; the one it replaces is accepted until `now + overlapMs`. Null when
 * no client has that access key.
 */
export function rollClientSecret(
  clients: ClientStore,
  accessKey: string,
  overlapMs: number,
  now: number,
): Promise<Client | null> {
  return clients.rollSecret({
    accessKey,
    secretKey: randomId('sk_', 32),
    previousExpiresAt: now + overlapMs,
  });
}
