import type { Response } from 'express';
import { writeJsonList } from './list-stream.js';
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

/** Hex SHA-256 of the body (decoded when it came compressed; of '' when there is none): the request's content. */
export function bodySha256Of(res: Response): string {
  const hash = res.locals.bodySha256 as string | undefined;
  if (hash === undefined) throw new Error('route mounted without the auth middleware');
  return hash;
}

/** A 200 with its success code in Svc-Status and the request id echoed. */
export function sendOk(res: Response, code: SvcStatusCode, body: unknown): void {
  writeJson(res, 200, svcStatusHeader([code]), body);
}

/**
 * A 200 whose body is `{"<key>": [...entries]}`, written in pieces (writeJsonList: ~64 KiB a write, the socket's
 * backpressure respected, other requests answered between turns), so a large answer (a batch of 500 orders of
 * 250 items is several MB) never holds the event loop nor its whole text at once. Chunked: no Content-Length.
 */
export async function streamOk(
  res: Response,
  code: SvcStatusCode,
  key: string,
  entries: Iterable<unknown>,
): Promise<void> {
  setAnswerHeaders(res, svcStatusHeader([code]));
  res.writeHead(200);
  await writeJsonList(res, key, entries);
}

function setAnswerHeaders(res: Response, svcStatus: string): void {
  const requestId = res.req.headers['svc-requestid'];
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Svc-Status', svcStatus);
  if (typeof requestId === 'string' && requestId) res.setHeader('Svc-RequestId', requestId);
}

/**
 * Writes a whole JSON answer with Svc-Status and the request id echoed, in one call: what Express's res.json
 * does without its content negotiation, ETag and freshness steps (the API has none of them). Headers set
 * before (Allow, Retry-After) are kept; a HEAD request gets the headers alone (Node drops the body).
 */
export function writeJson(res: Response, status: number, svcStatus: string, body: unknown): void {
  const json = JSON.stringify(body);
  setAnswerHeaders(res, svcStatus);
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.writeHead(status);
  res.end(json);
}
