/**
 * The store's secrets, as both adapters keep them: a client's secret key sealed under SECRETS_KEY (bound to its
 * access key), a card token only as an HMAC under a random token-hashing key, and one `store_secrets` row
 * naming the SECRETS_KEY that seals the store and holding the token-hashing key sealed under it. Rotation
 * re-seals the secret keys and that row; card hashes stay valid since the tokens themselves are never kept.
 */
import { isSealed, newSecretsKey, SealedValueError, tokenHasher, type Sealer } from '../../domain/secrets.js';

/** What a code migration may use besides its database handle. */
export interface MigrationContext {
  sealer: Sealer;
}

/** The one row of `store_secrets`. */
export interface SecretsRow {
  keyId: string;
  /** The token-hashing key, hex, sealed under the SECRETS_KEY named by keyId. */
  tokenKey: string;
}

/** The secrets of an open store, under the process's SECRETS_KEY. */
export interface StoreSecrets {
  readonly sealer: Sealer;
  hashToken(token: string): string;
  /** The client's secret key in clear; throws naming SECRETS_KEY when it does not open. */
  unsealSecretKey(sealed: string, accessKey: string): string;
}

/** The key that seals search cursors, derived from the token-hashing key as webhook secrets are (webhook.rows.ts). */
export const cursorKeyOf = (secrets: Pick<StoreSecrets, 'hashToken'>): Buffer =>
  Buffer.from(secrets.hashToken('search-cursor:key'), 'hex');

/** The process's SECRETS_KEY is not the one that seals the store (never set, or rotated since). */
export class SecretsKeyMismatchError extends Error {
  /** What /readyz names as down: the process's key, not the store, which answers. */
  readonly down = 'secrets-key';

  constructor(processKeyId: string, storeKeyId: string | undefined) {
    super(
      `SECRETS_KEY (key id ${processKeyId}) does not open this store's secrets` +
        (storeKeyId ? `, sealed under key id ${storeKeyId}` : '') +
        ': give every process the SECRETS_KEY (on SQLite, secrets.key) it was first sealed or last rotated with',
    );
  }
}

const TOKEN_KEY_CONTEXT = 'store_secrets.token_key';

/** The row of a store sealed for the first time: a fresh token-hashing key. */
export function newSecretsRow(sealer: Sealer): SecretsRow {
  return { keyId: sealer.keyId, tokenKey: sealer.seal(newSecretsKey().toString('hex'), TOKEN_KEY_CONTEXT) };
}

/** Opens the store's row with the process's key; throws a SecretsKeyMismatchError when it is another key. */
export function openSecrets(sealer: Sealer, row: SecretsRow | undefined): StoreSecrets {
  if (!row || !sealer.opens(row.keyId)) throw new SecretsKeyMismatchError(sealer.keyId, row?.keyId);
  const hashToken = tokenHasher(Buffer.from(sealer.unseal(row.tokenKey, TOKEN_KEY_CONTEXT), 'hex'));
  return {
    sealer,
    hashToken,
    unsealSecretKey(sealed, accessKey) {
      try {
        return sealer.unseal(sealed, accessKey);
      } catch (err) {
        if (!(err instanceof SealedValueError)) throw err;
        if (!isSealed(sealed))
          throw new Error(`the secret key of ${accessKey} is stored unsealed`, { cause: err });
        // The likely cause in a running process: another one rotated the key since it started.
        throw new SecretsKeyMismatchError(sealer.keyId, undefined);
      }
    },
  };
}

/**
 * Re-sealing under `next` (another key, or the process's own SECRETS_KEY for what SECRETS_KEY_PREVIOUS sealed):
 * the row as read in the rotating transaction (which must still open here), and each client's secret key.
 */
export function resealer(current: StoreSecrets, next: Sealer) {
  const { sealer } = current;
  return {
    row(row: SecretsRow | undefined): SecretsRow {
      if (!row || !sealer.opens(row.keyId)) throw new SecretsKeyMismatchError(sealer.keyId, row?.keyId);
      const tokenKey = sealer.unseal(row.tokenKey, TOKEN_KEY_CONTEXT);
      return { keyId: next.keyId, tokenKey: next.seal(tokenKey, TOKEN_KEY_CONTEXT) };
    },
    secretKey: (sealed: string, accessKey: string): string =>
      next.seal(current.unsealSecretKey(sealed, accessKey), accessKey),
    /** Whether `next` already seals this secret key (nothing to re-seal). */
    isCurrent: (sealed: string, accessKey: string): boolean => next.sealedUnderCurrent(sealed, accessKey),
  };
}

/** A client's sealed secret keys as both adapters read them for re-sealing: the current and a rolled one. */
export interface SealedClient {
  client_id: number;
  access_key: string;
  secret_key: string;
  previous_secret_key: string | null;
}

export const SEALED_CLIENT_COLUMNS = 'client_id, access_key, secret_key, previous_secret_key';

type Resealer = ReturnType<typeof resealer>;

/** Whether `reseal`'s key already seals both secret keys of the client. */
export const resealedClient = (reseal: Resealer, c: SealedClient): boolean =>
  reseal.isCurrent(c.secret_key, c.access_key) &&
  (c.previous_secret_key === null || reseal.isCurrent(c.previous_secret_key, c.access_key));

/** Both secret keys of the client re-sealed (the previous one null when it has none). */
export const resealClient = (
  reseal: Resealer,
  c: SealedClient,
): { secretKey: string; previousSecretKey: string | null } => ({
  secretKey: reseal.secretKey(c.secret_key, c.access_key),
  previousSecretKey:
    c.previous_secret_key === null ? null : reseal.secretKey(c.previous_secret_key, c.access_key),
});
