/** Bytes of SECRETS_KEY and of the card-token hashing key. */
export const SECRETS_KEY_BYTES = 32;

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
