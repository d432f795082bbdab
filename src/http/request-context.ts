import crypto from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Logger } from '../logger.js';

declare module 'express-serve-static-core' {
  interface Request {
    log: Logger;
  }
}

/** A child logger bound to the request id on every request, and one line when the response is sent. */
export function requestContext(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    const requestId = req.get('svc-requestid')?.slice(0, 64) || `srv-${crypto.randomUUID()}`;
    req.log = logger.child({ requestId });
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      req.log.info(
        { method: req.method, path: req.path, status: res.statusCode, svcStatus: res.get('Svc-Status'), ms },
        'request',
      );
    });
    next();
  };
}
