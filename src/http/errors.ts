import type { ErrorRequestHandler } from 'express';
import type { z } from 'zod';
import { SvcStatus, httpStatusOf, svcStatusHeader, type SvcStatusCode } from './status-codes.js';

/** A failure a client can act on: its Svc-Status codes and one readable message per problem. */
export class ApiError extends Error {
  readonly codes: SvcStatusCode[];
  readonly messages: string[];
  readonly headers: Record<string, string>;

  constructor(
    codes: SvcStatusCode | SvcStatusCode[],
    messages: string | string[],
    headers: Record<string, string> = {},
  ) {
    const list = Array.isArray(messages) ? messages : [messages];
    super(list.join('; '));
    this.codes = Array.isArray(codes) ? codes : [codes];
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

/** One readable line per zod issue, naming the field: `listings[1].quantity: must be ...`. */
export function describeIssue(issue: z.core.$ZodIssue, prefix: (string | number)[] = []): string {
  const path = formatPath([...prefix, ...issue.path]);
  return path ? `${path}: ${issue.message}` : issue.message;
}

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out;
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
  res.status(apiError.httpStatus);
  res.set('Svc-Status', svcStatusHeader(apiError.codes));
  if (requestId) res.set('Svc-RequestId', requestId);
  res.set(apiError.headers);
  const body: ErrorBody = { requestId, messages: apiError.messages };
  res.json(body);
};

function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as { type?: string; status?: number; code?: string };
  if (e?.type === 'entity.too.large') return new ApiError(SvcStatus.TOO_LARGE, 'body: larger than 1 MiB');
  if (e?.code === 'SQLITE_BUSY' || e?.code === 'ECONNREFUSED')
    return new ApiError(
      SvcStatus.UNAVAILABLE,
      'a dependency is busy or down; retry later with the same Svc-RequestId',
    );
  return new ApiError(
    SvcStatus.INTERNAL,
    'internal error; nothing was half-written, retry with the same Svc-RequestId',
  );
}
