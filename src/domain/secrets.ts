import crypto from 'node:crypto';

/** Bytes of SECRETS_KEY and of the card-token hashing key. */
export const SECRETS_KEY_BYTES = 32;

const SEALED_PREFIX = 'v1:';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** A sealed value that does not open under this key: another SECRETS_KEY sealed it, or it was altered. */
export class SealedValueError extends Error {}

/**
 * The 32 bytes of a SECRETS_KEY written as 64 hex characters or as base64; throws an Error saying which
 * forms are accepted.
 */
export function parseSecretsKey(text: string): Buffer {
  const value = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(value)
    ? Buffer.from(value, 'hex')
    : /^[A-Za-z0-9+/]{43}=?$/.test(value)
      ? Buffer.from(value, 'base64')
      : undefined;
  if (key?.length !== SECRETS_KEY_BYTES) {
    throw new Error('must be 32 bytes as 64 hex characters or base64 (e.g. `openssl rand -hex 32`)');
  }
  return key;
}

/** A fresh random key (SECRETS_KEY or a card-token hashing key). */
export function newSecretsKey(): Buffer {
  return crypto.randomBytes(SECRETS_KEY_BYTES);
}

/** Seals and opens values under one SECRETS_KEY (AES-256-GCM); `keyId` names the key without revealing it. */
export interface Sealer {
  readonly keyId: string;
  /** `v1:` + base64(nonce ‖ ciphertext ‖ tag); `context` (the row's access key) must be given again to open. */
  seal(plain: string, context: string): string;
  /** The value `seal` was given; throws a SealedValueError when the key or the context differ. */
  unseal(sealed: string, context: string): string;
}

/** Whether `value` has the form `seal` gives (which says nothing of the key that sealed it). */
export const isSealed = (value: string): boolean => value.startsWith(SEALED_PREFIX);

// Separate keys per use, so the sealing key and the key id never share bytes with the key as configured.
const derive = (key: Buffer, use: string, bytes = SECRETS_KEY_BYTES): Buffer =>
  Buffer.from(crypto.hkdfSync('sha256', key, Buffer.alloc(0), `bookorders ${use}`, bytes));

export function createSealer(secretsKey: Buffer): Sealer {
  const key = derive(secretsKey, 'seal v1');
  const keyId = derive(secretsKey, 'key id', 8).toString('hex');
  return {
    keyId,
    seal(plain, context) {
      const nonce = crypto.randomBytes(NONCE_BYTES);
      const cipher = crypto.createCipheriv('aes-256-gcm', key, nonce).setAAD(Buffer.from(context, 'utf8'));
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return SEALED_PREFIX + Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64');
    },
    unseal(sealed, context) {
      const raw = isSealed(sealed)
        ? Buffer.from(sealed.slice(SEALED_PREFIX.length), 'base64')
        : Buffer.alloc(0);
      if (raw.length < NONCE_BYTES + TAG_BYTES) throw new SealedValueError('not a sealed value');
      const decipher = crypto
        .createDecipheriv('aes-256-gcm', key, raw.subarray(0, NONCE_BYTES))
        .setAAD(Buffer.from(context, 'utf8'))
        .setAuthTag(raw.subarray(raw.length - TAG_BYTES));
      try {
        const body = raw.subarray(NONCE_BYTES, raw.length - TAG_BYTES);
        return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
      } catch {
        throw new SealedValueError(`does not open under SECRETS_KEY ${keyId}`);
      }
    },
  };
}

/** The stored form of a card token: lowercase hex HMAC-SHA256 under the store's token-hashing key. */
export function tokenHasher(tokenKey: Buffer): (token: string) => string {
  return (token) => crypto.createHmac('sha256', tokenKey).update(token, 'utf8').digest('hex');
}
