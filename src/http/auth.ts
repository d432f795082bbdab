import type { RequestHandler } from 'express';
import { sha256Hex, sign, signatureMatches, signingKey } from '../auth/signature.js';
import { MAX_REQUEST_ID_LENGTH } from '../services/orders/order-request.schema.js';
import { cachedFor } from '../services/read-cache.js';
import type { ClientStore } from '../store/port/store.port.js';
import { ApiError, authError } from './errors.js';
import { clientAddressOf, type Lockout } from '../redis/lockout.js';
import { bindLogContext } from './request-context.js';
import type { AuthContext } from './respond.js';
import { SvcStatus, type SvcStatusCode } from './status-codes.js';

// A disabled key is refused within a second in every web process.
const KEY_CACHE_MS = 1000;
// Access keys are `AK` and 20 hex digits; a longer value names no client and is not worth a lookup or a cache slot.
const ACCESS_KEY_MAX = 64;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]00:?00)$/;

export interface AuthDeps {
  clients: Pick<ClientStore, 'findByAccessKey'>;
  authLockout: Lockout;
  clock: () => number;
  maxSkewS: number;
}

interface Presented {
  requestId: string;
  accessKey: string;
  date: string;
  signature: string;
}

/** Checks the four headers of SPEC.md, all at once; returns the problems as codes and messages. */
function headerProblems(h: Partial<Presented>, now: number, maxSkewS: number): [SvcStatusCode, string][] {
  const problems: [SvcStatusCode, string][] = [];
  if (!h.requestId)
    problems.push([SvcStatus.REQUEST_ID_MISSING, 'Svc-RequestId: header is missing or empty']);
  else if (h.requestId.length > MAX_REQUEST_ID_LENGTH)
    problems.push([SvcStatus.INVALID, `Svc-RequestId: must be at most ${MAX_REQUEST_ID_LENGTH} characters`]);
  if (!h.date) problems.push([SvcStatus.DATE_MISSING, 'Svc-Date: header is missing']);
  else if (!ISO_UTC.test(h.date) || Number.isNaN(Date.parse(h.date)))
    problems.push([
      SvcStatus.DATE_UNPARSABLE,
      'Svc-Date: must be an ISO 8601 UTC time, e.g. 2026-11-21T10:00:00.000Z',
    ]);
  else if (Math.abs(Date.parse(h.date) - now) > maxSkewS * 1000)
    problems.push([SvcStatus.DATE_SKEWED, `Svc-Date: more than ${maxSkewS} s away from the server clock`]);
  if (!h.accessKey) problems.push([SvcStatus.KEY_UNKNOWN, 'Svc-Access-Key: header is missing']);
  if (!h.signature) problems.push([SvcStatus.SIGNATURE_MISSING, 'Svc-Signature: header is missing']);
  return problems;
}

function toApiError(problems: [SvcStatusCode, string][]): ApiError {
  const codes = problems.map(([code]) => code);
  const auth = codes.some((c) => c !== SvcStatus.INVALID);
  return new ApiError(
    auth ? [SvcStatus.AUTH_FAILED, ...codes] : codes,
    problems.map(([, m]) => m),
  );
}

/**
 * Authenticates a signed request (docs/api.md#signing): headers, then key, then signature over the raw body
 * (so `rawBody` must run first: the bytes as sent, compressed or not). Sets `res.locals.auth` and the body hash it signed (`bodySha256Of`).
 */
export function authenticate(deps: AuthDeps): RequestHandler {
  const findClient = cachedFor(KEY_CACHE_MS, async (accessKey: string) => {
    const client = await deps.clients.findByAccessKey(accessKey);
    return client && { ...client, signingKey: signingKey(client.secretKey) };
  });
  return async (req, res, next) => {
    const presented: Partial<Presented> = {
      requestId: req.get('svc-requestid'),
      accessKey: req.get('svc-access-key'),
      date: req.get('svc-date'),
      signature: req.get('svc-signature'),
    };
    const now = deps.clock();
    const problems = headerProblems(presented, now, deps.maxSkewS);
    if (problems.length > 0) throw toApiError(problems);
    const { requestId, accessKey, date, signature } = presented as Presented;

    const client = accessKey.length <= ACCESS_KEY_MAX ? await findClient(accessKey, now) : null;
    if (!client) throw authError(SvcStatus.KEY_UNKNOWN, 'Svc-Access-Key: unknown access key');
    if (client.disabled)
      throw authError(SvcStatus.KEY_DISABLED, 'Svc-Access-Key: this access key is disabled');
    // Per key and address: a stranger elsewhere who knows the key (it is in every log line) cannot lock it.
    const subject = `${accessKey} ${clientAddressOf(req)}`;
    const lockedMs = await deps.authLockout.lockedForMs(subject, now);
    if (lockedMs > 0) throw lockedError(lockedMs);

    const [path = '', rawQuery = ''] = splitOnce(req.originalUrl, '?');
    const bodySha256 = sha256Hex(Buffer.isBuffer(req.body) ? req.body : '');
    const parts = { method: req.method, path, rawQuery, date, requestId, body: undefined, bodySha256 };
    const expected = sign(client.signingKey, parts);
    if (!signatureMatches(expected, signature)) {
      const locked = await deps.authLockout.recordFailure(subject, now);
      req.log.info({ accessKey, address: clientAddressOf(req), locked }, 'signature mismatch');
      throw authError(SvcStatus.SIGNATURE_MISMATCH, 'Svc-Signature: does not match the request');
    }
    const auth: AuthContext = { clientId: client.clientId, accessKey, requestId };
    res.locals.auth = auth;
    res.locals.bodySha256 = bodySha256;
    bindLogContext(req, { clientId: client.clientId, accessKey });
    next();
  };
}

export function lockedError(lockedMs: number): ApiError {
  return new ApiError(
    SvcStatus.AUTH_LOCKED,
    'Svc-Access-Key: locked from this address after too many failed authentications; retry later',
    { 'Retry-After': String(Math.ceil(lockedMs / 1000)) },
  );
}

function splitOnce(value: string, separator: string): [string, string] {
  const at = value.indexOf(separator);
  return at === -1 ? [value, ''] : [value.slice(0, at), value.slice(at + 1)];
}
