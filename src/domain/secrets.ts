import crypto from 'node:crypto';
import { SECRETS_KEY_BYTES } from '../config/secrets-key-format.js';

const SEALED_PREFIX = 'v1:';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** A sealed value that does not open under this key: another SECRETS_KEY sealed it, or it was altered. */
export class SealedValueError extends Error {}

/** A fresh random key (SECRETS_KEY or a card-token hashing key). */
export function newSecretsKey(): Buffer {
  return crypto.randomBytes(SECRETS_KEY_BYTES);
}

/**
 * Seals under SECRETS_KEY and opens under it or, during a rotation, under SECRETS_KEY_PREVIOUS
 * (AES-256-GCM); a key id names a key without revealing it.
 */
export interface Sealer {
  /** The id of the key that seals: SECRETS_KEY. */
  readonly keyId: string;
  /** Whether values sealed under the key of `keyId` open here (SECRETS_KEY, or SECRETS_KEY_PREVIOUS). */
  opens(keyId: string | undefined): boolean;
  /** `v1:` + base64(nonce ‖ ciphertext ‖ tag); `context` (the row's access key) must be given again to open. */
  seal(plain: string, context: string): string;
  /** The value `seal` was given; throws a SealedValueError when no key opens it or the context differs. */
  unseal(sealed: string, context: string): string;
  /** Whether SECRETS_KEY itself opens `sealed` (false for a value still under SECRETS_KEY_PREVIOUS). */
  sealedUnderCurrent(sealed: string, context: string): boolean;
}

/** Whether `value` has the form `seal` gives (which says nothing of the key that sealed it). */
export const isSealed = (value: string): boolean => value.startsWith(SEALED_PREFIX);

// Separate keys per use, so the sealing key and the key id never share bytes with the key as configured.
const derive = (key: Buffer, use: string, bytes = SECRETS_KEY_BYTES): Buffer =>
  Buffer.from(crypto.hkdfSync('sha256', key, Buffer.alloc(0), `bookorders ${use}`, bytes));

/** The id of a SECRETS_KEY, as logs and store_secrets name it. */
export const secretsKeyId = (secretsKey: Buffer): string => derive(secretsKey, 'key id', 8).toString('hex');

/** One key's AES-256-GCM: undefined from `open` when this key did not seal the value (or it was altered). */
function aesKey(secretsKey: Buffer) {
  const key = derive(secretsKey, 'seal v1');
  return {
    seal(plain: string, context: string): string {
      const nonce = crypto.randomBytes(NONCE_BYTES);
      const cipher = crypto.createCipheriv('aes-256-gcm', key, nonce).setAAD(Buffer.from(context, 'utf8'));
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return SEALED_PREFIX + Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64');
    },
    open(raw: Buffer, context: string): string | undefined {
      const decipher = crypto
        .createDecipheriv('aes-256-gcm', key, raw.subarray(0, NONCE_BYTES))
        .setAAD(Buffer.from(context, 'utf8'))
        .setAuthTag(raw.subarray(raw.length - TAG_BYTES));
      try {
        const body = raw.subarray(NONCE_BYTES, raw.length - TAG_BYTES);
        return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
      } catch {
        return undefined;
      }
    },
  };
}

/** The bytes of a sealed value; throws a SealedValueError when it has not the form `seal` gives. */
function sealedBytes(sealed: string): Buffer {
  const raw = isSealed(sealed) ? Buffer.from(sealed.slice(SEALED_PREFIX.length), 'base64') : Buffer.alloc(0);
  if (raw.length < NONCE_BYTES + TAG_BYTES) throw new SealedValueError('not a sealed value');
  return raw;
}

export function createSealer(secretsKey: Buffer, previousKey?: Buffer): Sealer {
  const keyId = secretsKeyId(secretsKey);
  const current = aesKey(secretsKey);
  const previous = previousKey && !previousKey.equals(secretsKey) ? aesKey(previousKey) : undefined;
  const previousId = previous && secretsKeyId(previousKey!);
  const named = previousId ? `${keyId} (or SECRETS_KEY_PREVIOUS ${previousId})` : keyId;
  return {
    keyId,
    opens: (id) => id !== undefined && (id === keyId || id === previousId),
    seal: current.seal,
    unseal(sealed, context) {
      const raw = sealedBytes(sealed);
      const plain = current.open(raw, context) ?? previous?.open(raw, context);
      if (plain === undefined) throw new SealedValueError(`does not open under SECRETS_KEY ${named}`);
      return plain;
    },
    sealedUnderCurrent: (sealed, context) => current.open(sealedBytes(sealed), context) !== undefined,
  };
}

/** The stored form of a card token: lowercase hex HMAC-SHA256 under the store's token-hashing key. */
export function tokenHasher(tokenKey: Buffer): (token: string) => string {
  return (token) => crypto.createHmac('sha256', tokenKey).update(token, 'utf8').digest('hex');
}
