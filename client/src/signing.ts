// Request signing of docs/api.md#signing: lowercase hex HMAC-SHA256 under the secret key of
// "SVC1-HMAC-SHA256\n" + method + path + canonical query + Svc-Date + Svc-RequestId + SHA-256 of the body.
// The one copy: the service checks signatures with this module too (src/auth/signature.ts), so what a caller
// signs and what the service expects cannot drift apart. Pure (node:crypto only), so the service may import it.
import crypto from 'node:crypto';

export const SIGNING_ALGORITHM = 'SVC1-HMAC-SHA256';
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
// Node 20.12 and later hash in one call without a Hash object (a third of the cost for a small input).
const oneShotHash = (crypto as { hash?: (algorithm: string, data: string | Uint8Array) => string }).hash;

/** Lower-case hex SHA-256 of bytes or UTF-8 text. */
export function sha256Hex(data: string | Uint8Array): string {
  // Stryker disable next-line ConditionalExpression: a shortcut, the hash of nothing is EMPTY_SHA256
  if (data.length === 0) return EMPTY_SHA256;
  // Stryker disable next-line ConditionalExpression: both ways give the same hash
  return oneShotHash
    ? oneShotHash('sha256', data)
    : // Stryker disable next-line all: the fallback runs only on Node before 20.12
      crypto.createHash('sha256').update(data).digest('hex');
}

/** RFC 3986 encoding: unreserved characters kept, every other UTF-8 byte as upper-case %XX. */
function rfc3986(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** Decodes as application/x-www-form-urlencoded: `+` is a space, `%XX` a byte; bad escapes are kept as they are. */
function formDecode(value: string): string {
  const spaced = value.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced.replace(/(%[0-9A-Fa-f]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run);
      } catch {
        return run;
      }
    });
  }
}

/** The canonical query: pairs decoded, encoded again by RFC 3986, sorted by name then value, joined by `&`. */
export function canonicalQuery(rawQuery: string): string {
  // Stryker disable next-line ConditionalExpression,StringLiteral: a shortcut, '' has no pairs either
  if (rawQuery === '') return '';
  const pairs = rawQuery
    .split('&')
    .filter((part) => part !== '')
    .map((part) => {
      const eq = part.indexOf('=');
      const name = eq === -1 ? part : part.slice(0, eq);
      const value = eq === -1 ? '' : part.slice(eq + 1);
      return [rfc3986(formDecode(name)), rfc3986(formDecode(value))] as const;
    });
  pairs.sort(([an, av], [bn, bv]) => compareBytes(an, bn) || compareBytes(av, bv));
  return pairs.map(([name, value]) => `${name}=${value}`).join('&');
}

function compareBytes(a: string, b: string): number {
  // Encoded forms are ASCII, so code-unit order is byte order.
  return a < b
    ? -1
    : // Stryker disable next-line ConditionalExpression: V8's sort tells a negative answer only from the rest
      a > b
      ? 1
      : 0;
}

export interface RequestToSign {
  method: string;
  /** The path as sent, without the query, e.g. `/v1/orders/42`. */
  path: string;
  /** The query string as sent, without `?`. */
  rawQuery: string;
  date: string;
  requestId: string;
  /** Lower-case hex SHA-256 of the body bytes (of nothing when there is no body). */
  bodySha256: string;
}

export function stringToSign(request: RequestToSign): string {
  return [
    SIGNING_ALGORITHM,
    request.method.toUpperCase(),
    request.path,
    canonicalQuery(request.rawQuery),
    request.date,
    request.requestId,
    request.bodySha256,
  ].join('\n');
}

/** The `Svc-Signature` of a request. A KeyObject made once saves preparing the key for every request. */
export function signRequest(secretKey: string | crypto.KeyObject, request: RequestToSign): string {
  return crypto.createHmac('sha256', secretKey).update(stringToSign(request)).digest('hex');
}

/** Compares two hex signatures, as given, in constant time. */
export function sameSignature(expected: string, presented: string): boolean {
  const a = Buffer.from(expected, 'utf8');
  const b = Buffer.from(presented, 'utf8');
  // Compared with itself when the lengths differ, so the time does not tell where they differ.
  return crypto.timingSafeEqual(a, b.length === a.length ? b : a) && b.length === a.length;
}
