import type { Request } from 'express';
import { ApiError } from './errors.js';
import { SvcStatus } from './status-codes.js';

/** The request's JSON object: 4150 for another media type, 4003 for broken JSON, 4000 for a non-object root. */
export function jsonObjectBody(req: Request): Record<string, unknown> {
  const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  if (!req.is('application/json')) {
    throw new ApiError(SvcStatus.UNSUPPORTED_MEDIA_TYPE, 'Content-Type: must be application/json');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new ApiError(SvcStatus.INVALID_JSON, `body: not valid JSON (${(err as Error).message})`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ApiError(SvcStatus.MALFORMED, 'body: must be a JSON object (an OrderRequest)');
  }
  return parsed as Record<string, unknown>;
}
