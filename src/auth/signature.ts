// Request signatures as the service checks them. The canonical request (docs/api.md#signing) is the client
// package's (client/src/signing.ts, pure), so that the service and its callers sign by one copy of the rules;
// here only what the service adds: a body given as bytes, a secret prepared once, a comparison that takes the
// same time wherever two signatures differ.
import crypto from 'node:crypto';
import {
  sha256Hex,
  signRequest,
  stringToSign as requestStringToSign,
  type RequestToSign,
} from '../../client/src/signing.js';

export { canonicalQuery, sameSignature, sha256Hex, SIGNING_ALGORITHM } from '../../client/src/signing.js';

export interface SignedParts {
  method: string;
  path: string;
  rawQuery: string;
  date: string;
  requestId: string;
  body: Buffer | string | undefined;
  /** The body's lower-case hex SHA-256 when the caller has it already; `body` is then not hashed again. */
  bodySha256?: string;
}

/** The parts as the signing module takes them, the body hashed unless its hash is given. */
function toSign(parts: SignedParts): RequestToSign {
  return parts.bodySha256 === undefined
    ? { ...parts, bodySha256: sha256Hex(parts.body ?? '') }
    : (parts as RequestToSign);
}

export function stringToSign(parts: SignedParts): string {
  return requestStringToSign(toSign(parts));
}

/**
 * Lower-case hex HMAC-SHA256 of the string to sign. A KeyObject made once (`signingKey`) saves preparing the
 * key again for every request.
 */
export function sign(secretKey: string | crypto.KeyObject, parts: SignedParts): string {
  return signRequest(secretKey, toSign(parts));
}

/** The secret key as a KeyObject for `sign`. */
export function signingKey(secretKey: string): crypto.KeyObject {
  return crypto.createSecretKey(Buffer.from(secretKey, 'utf8'));
}
