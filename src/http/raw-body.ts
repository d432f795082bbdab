import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { RequestHandler } from 'express';
import { sha256Hex } from '../auth/signature.js';
import { ApiError } from './errors.js';
import { SvcStatus } from './status-codes.js';

/**
 * Reads the request's body into `req.body` as one Buffer (left undefined when the request has none), at most
 * `limitBytes`, exactly as sent: a compressed body stays compressed, since the signature covers the bytes as
 * sent (docs/api.md#signing); `decodeBody` inflates it once the signature holds. A body (chunked or not) is
 * refused with 4130 as soon as it passes the limit, without keeping the rest; the error handler closes the
 * connection, since the request never completed, lingering so that the client reads the answer.
 */
export function rawBody(limitBytes: number): RequestHandler {
  return (req, _res, next) => {
    if (req.headers['transfer-encoding'] === undefined && req.headers['content-length'] === undefined)
      return next();
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (err?: ApiError) => {
      if (settled) return;
      settled = true;
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      if (err) return next(err);
      req.body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
      next();
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limitBytes) chunks.push(chunk);
      else settle(tooLarge(limitBytes));
    };
    const onEnd = () => settle();
    const onError = () => settle(aborted());
    const onClose = () => settle(aborted());
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  };
}

const tooLarge = (limitBytes: number) =>
  new ApiError(SvcStatus.TOO_LARGE, `body: larger than ${limitBytes / 2 ** 20} MiB`);

const aborted = () =>
  new ApiError(SvcStatus.MALFORMED, 'body: the connection ended before the whole body came');

type Inflate = (data: Buffer, options: zlib.ZlibOptions | zlib.BrotliOptions) => Promise<Buffer>;
const INFLATE: Record<string, Inflate> = {
  gzip: promisify(zlib.gunzip),
  'x-gzip': promisify(zlib.gunzip),
  deflate: promisify(zlib.inflate),
  br: promisify(zlib.brotliDecompress),
};

/**
 * After authentication: a body sent with `Content-Encoding` gzip, deflate or br is inflated (off the event
 * loop, at most `limitBytes` out) and replaces `req.body`; the request's hash for duplicate detection becomes
 * that of the decoded body, so the same order sent compressed or not is the same request. A body that does not
 * decode is 4003, one that inflates past the limit 4130, another encoding 4150.
 */
export function decodeBody(limitBytes: number): RequestHandler {
  return async (req, res, next) => {
    const encoding = req.headers['content-encoding']?.trim().toLowerCase();
    if (encoding === undefined || encoding === '' || encoding === 'identity') return next();
    const inflate = INFLATE[encoding];
    if (!inflate)
      throw new ApiError(
        SvcStatus.UNSUPPORTED_MEDIA_TYPE,
        'Content-Encoding: not supported; use gzip, deflate, br or none',
      );
    if (!Buffer.isBuffer(req.body)) return next();
    let decoded: Buffer;
    try {
      decoded = await inflate(req.body, { maxOutputLength: limitBytes });
    } catch (err) {
      if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(limitBytes);
      throw new ApiError(SvcStatus.INVALID_JSON, `body: does not decode as Content-Encoding ${encoding}`);
    }
    req.body = decoded;
    res.locals.bodySha256 = sha256Hex(decoded);
    next();
  };
}
