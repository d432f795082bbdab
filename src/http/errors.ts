import type { ErrorRequestHandler } from 'express';
import { isStoreUnavailable } from '../store/store-errors.js';
import { SecretsKeyMismatchError } from '../store/secrets/store-secrets.js';
import { lingerAfterAnswer } from './http-server.js';
import { writeJson } from './respond.js';
import { SvcStatus, httpStatusOf, svcStatusHeader, type SvcStatusCode } from './status-codes.js';

/** How much of its problems one answer tells: a hostile request cannot make a huge answer (or log line). */
export const MESSAGE_LIMITS = { count: 50, chars: 300 };

/** The first MESSAGE_LIMITS.count messages, each cut to MESSAGE_LIMITS.chars, and a line saying how many more. */
export function boundMessages(messages: readonly string[]): string[] {
  const { count, chars } = MESSAGE_LIMITS;
  const kept = messages.slice(0, count).map((m) => (m.length > chars ? `${m.slice(0, chars - 1)}…` : m));
  const more = messages.length - kept.length;
  if (more > 0) kept.push(`and ${more} more problem${more > 1 ? 's' : ''}`);
  return kept;
}

/** A failure a client can act on: its Svc-Status codes and one readable message per problem (bounded). */
export class ApiError extends Error {
  readonly codes: SvcStatusCode[];
  readonly messages: string[];
  readonly headers: Record<string, string>;

  constructor(
    codes: SvcStatusCode | SvcStatusCode[],
    messages: string | string[],
    headers: Record<string, string> = {},
  ) {
    const list = boundMessages(Array.isArray(messages) ? messages : [messages]);
    super(list.join('; '));
    this.codes = Array.isArray(codes) ? [...new Set(codes)] : [codes];
    this.messages = list;
    this.headers = headers;
  }

  /** HTTP status: that of the lowest code, the most fundamental problem. */
  get httpStatus(): number {
    return httpStatusOf(Math.min(...this.codes));
  }
}

export function authError(code: SvcStatusCode, message: string): ApiError {
  return new ApiError([SvcStatus.AUTH_FAILED, code], message);
}

export interface ErrorBody {
  requestId: string;
  messages: string[];
}

/** Writes every error response: ErrorResponse body, Svc-Status, Svc-RequestId echoed; unknown errors are 5000. */
export const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
  const apiError = toApiError(err);
  if (apiError.codes.includes(SvcStatus.INTERNAL)) req.log.error({ err }, 'internal error');
  else req.log.info({ svcStatus: apiError.codes, messages: apiError.messages }, 'request refused');
  const requestId = req.get('svc-requestid') ?? '';
  // A body refused before it was read is never read: the connection closes instead of staying alive for it,
  // lingering so that a client still sending gets this answer.
  if (!req.complete) {
    res.setHeader('Connection', 'close');
    lingerAfterAnswer(req);
  }
  for (const [name, value] of Object.entries(apiError.headers)) res.setHeader(name, value);
  const body: ErrorBody = { requestId, messages: apiError.messages };
  writeJson(res, apiError.httpStatus, svcStatusHeader(apiError.codes), body);
};

function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as { type?: string; status?: number; code?: string };
  if (e?.type === 'entity.too.large') return new ApiError(SvcStatus.TOO_LARGE, 'body: larger than 1 MiB');
  if (e?.type === 'request.aborted')
    return new ApiError(SvcStatus.MALFORMED, 'body: the connection ended before the whole body came');
  if (e?.type === 'encoding.unsupported')
    return new ApiError(SvcStatus.UNSUPPORTED_MEDIA_TYPE, 'Content-Encoding: not supported');
  // A process left on a rotated-away SECRETS_KEY: unavailable (and not ready), not an internal error.
  if (err instanceof SecretsKeyMismatchError)
    return new ApiError(SvcStatus.UNAVAILABLE, "this process cannot open the store's secrets; retry later", {
      'Retry-After': '1',
    });
  // ECONNREFUSED is also Redis's (an enqueue or a rate limit that could not reach it).
  if (isStoreUnavailable(err))
    return new ApiError(
      SvcStatus.UNAVAILABLE,
      'a dependency is busy or down; retry later with the same Svc-RequestId',
      { 'Retry-After': '1' },
    );
  return new ApiError(
    SvcStatus.INTERNAL,
    'internal error; nothing was half-written, retry with the same Svc-RequestId',
  );
}
