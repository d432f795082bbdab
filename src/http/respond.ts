import type { Response } from 'express';
import { svcStatusHeader, type SvcStatusCode } from './status-codes.js';

/** Identity of the caller, set by the auth middleware for the signed endpoints. */
export interface AuthContext {
  clientId: number;
  accessKey: string;
  requestId: string;
}

export function authOf(res: Response): AuthContext {
  const auth = res.locals.auth as AuthContext | undefined;
  if (!auth) throw new Error('route mounted without the auth middleware');
  return auth;
}

/** Hex SHA-256 of the raw body as the auth middleware hashed it for the signature (of '' when there is none). */
export function bodySha256Of(res: Response): string {
  const hash = res.locals.bodySha256 as string | undefined;
  if (hash === undefined) throw new Error('route mounted without the auth middleware');
  return hash;
}

/** A 200 with its success code in Svc-Status and the request id echoed. */
export function sendOk(res: Response, code: SvcStatusCode, body: unknown): void {
  res.status(200).set('Svc-Status', svcStatusHeader([code]));
  const requestId = res.req.get('svc-requestid');
  if (requestId) res.set('Svc-RequestId', requestId);
  res.json(body);
}
