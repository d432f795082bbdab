import type crypto from 'node:crypto';
import type { Client } from '../store/port/store.port.js';
import { sign, sameSignature, signingKey, type SignedParts } from './signature.js';

/** A client's secrets as a web process keeps them: prepared once for signing, by version. */
export interface ClientKeys {
  current: { version: number; key: crypto.KeyObject };
  /** The secret before the last roll, until it expires. */
  previous: { version: number; key: crypto.KeyObject; expiresAt: number } | null;
}

export function clientKeysOf(client: Pick<Client, 'secretKey' | 'secretVersion' | 'previous'>): ClientKeys {
  const { previous } = client;
  return {
    current: { version: client.secretVersion, key: signingKey(client.secretKey) },
    previous: previous && {
      version: client.secretVersion - 1,
      key: signingKey(previous.secretKey),
      expiresAt: previous.expiresAt,
    },
  };
}

/**
 * The version of the secret that made `presented` (the current one, else the previous one until its expiry), or
 * null when none did: a roll refuses nothing during its overlap, and the old secret like a wrong one after.
 */
export function signingVersion(
  keys: ClientKeys,
  parts: SignedParts,
  presented: string,
  now: number,
): number | null {
  if (sameSignature(sign(keys.current.key, parts), presented)) return keys.current.version;
  const { previous } = keys;
  if (previous && now < previous.expiresAt && sameSignature(sign(previous.key, parts), presented))
    return previous.version;
  return null;
}
