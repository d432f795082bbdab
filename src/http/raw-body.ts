import express, { type RequestHandler } from 'express';
import { ApiError } from './errors.js';
import { SvcStatus } from './status-codes.js';

/**
 * Reads the request's body into `req.body` as one Buffer (left undefined when the request has none), at most
 * `limitBytes`. A body over the limit is read to its end and dropped, then refused with 4130 (the client gets
 * its answer rather than a reset connection). A compressed body goes to body-parser's raw parser, which inflates
 * it; the plain case, every signed request, is read here without its per-request setup.
 */
export function rawBody(limitBytes: number): RequestHandler {
  const inflating = express.raw({ type: () => true, limit: limitBytes });
  return (req, res, next) => {
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding.toLowerCase() !== 'identity') return inflating(req, res, next);
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
    };
    const onEnd = () => settle(size > limitBytes ? tooLarge(limitBytes) : undefined);
    const onError = () => settle(aborted());
    const onClose = () => settle(aborted());
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  };
}

const tooLarge = (limitBytes: number) =>
  new ApiError(SvcStatus.TOO_LARGE, `body: larger than ${limitBytes / 2 ** 20} MiB`);

const aborted = () =>
  new ApiError(SvcStatus.MALFORMED, 'body: the connection ended before the whole body came');
