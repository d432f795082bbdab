import crypto from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import type { Logger } from '../logger.js';
import type { AnsweredRequest, RequestObserver } from '../metrics/http.metrics.js';

declare module 'express-serve-static-core' {
  interface Request {
    /** A logger bound to this request's context (request id, then client); made on first use. */
    readonly log: Logger;
  }
}

interface LogContext {
  root: Logger;
  bindings: Record<string, unknown>;
  child?: Logger;
}

// On the request itself rather than in a WeakMap: thousands of short-lived WeakMap keys a second cost the
// garbage collector more than a property.
const CONTEXT = Symbol('log context');
type WithContext = Request & { [CONTEXT]?: LogContext };

/** Adds fields (e.g. the authenticated client) to every later log line of the request. */
export function bindLogContext(req: Request, fields: Record<string, unknown>): void {
  const context = (req as WithContext)[CONTEXT];
  if (!context) return;
  context.bindings = { ...context.bindings, ...fields };
  context.child = undefined;
}

/**
 * Gives every request a log context bound to its request id and writes one line when the response is sent,
 * when `observe` (the request metrics) is told too. The child logger is made only when something logs during
 * the request: most requests log only that line.
 */
export function requestContext(logger: Logger, request: Request, observe?: RequestObserver): RequestHandler {
  Object.defineProperty(request, 'log', {
    configurable: true,
    get(this: Request): Logger {
      const context = (this as WithContext)[CONTEXT];
      if (!context) return logger;
      context.child ??= context.root.child(context.bindings);
      return context.child;
    },
  });
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    const requestId = req.get('svc-requestid')?.slice(0, 64) || `srv-${crypto.randomUUID()}`;
    const context: LogContext = { root: logger, bindings: { requestId } };
    (req as WithContext)[CONTEXT] = context;
    res.once('finish', () => {
      const svcStatus = res.getHeader('Svc-Status');
      const answered: AnsweredRequest = {
        method: req.method,
        // The full path as sent (a router sees only its own part in req.path), without the query.
        path: req.originalUrl.split('?', 1)[0]!,
        status: res.statusCode,
        svcStatus: svcStatus === undefined ? undefined : String(svcStatus),
        ms: Number(process.hrtime.bigint() - started) / 1e6,
      };
      observe?.(answered);
      logger.info({ ...context.bindings, ...answered, path: answered.path.slice(0, 2048) }, 'request');
    });
    next();
  };
}
