import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorRequestHandler, Express, NextFunction, Request, RequestHandler, Response } from 'express';
import { ApiError } from './errors.js';
import { SvcStatus } from './status-codes.js';

/**
 * The signed API's few paths, matched by one regular expression each and run as one fixed chain of Express-style
 * handlers: Express's router cost more CPU than anything but Node's HTTP (BENCHMARKS.md, dry run).
 */
export interface SignedRoute {
  /** The path after `/v1` (no query); capture groups become `req.params` by `params`' names. */
  pattern: RegExp;
  params?: readonly string[];
  /** The handlers of each method; HEAD is answered by GET's. */
  methods: Partial<Record<'GET' | 'POST', RequestHandler[]>>;
}

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

export interface SignedFront {
  /** Express's application, for its request and response prototypes and settings. */
  app: Express;
  routes: SignedRoute[];
  /** Run first on every request of these paths, a refused method too (metrics, request context). */
  context: RequestHandler[];
  /** Run after `context` before a route's own handlers (content negotiation, body, authentication). */
  guards: RequestHandler[];
  /**
   * Asked before an error is answered; when it returns a promise, what that resolves to is answered instead (the
   * rate limit's charge of a request that failed before its cost was taken: chargeBeforeError).
   */
  beforeError?: (err: unknown, res: Response) => Promise<unknown> | undefined;
  onError: ErrorRequestHandler;
}

const V1 = /^\/[vV]1(\/[^?]*)(?:\?|$)/;

/**
 * Answers a request for one of the signed paths of `front.routes` and returns true, or returns false for any
 * other URL (Express then answers it). A known path with another method is 4050 with Allow, before anyone is
 * asked to authenticate.
 */
export function signedRoutes(front: SignedFront): (req: IncomingMessage, res: ServerResponse) => boolean {
  const compiled = front.routes.map((route) => {
    const allowed = Object.keys(route.methods).flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m]));
    const chains = new Map<string, Listener>();
    for (const [method, handlers] of Object.entries(route.methods)) {
      const run = chain(front, [...front.context, ...front.guards, ...handlers!]);
      chains.set(method, run);
      if (method === 'GET') chains.set('HEAD', run);
    }
    const wrongMethod = chain(front, [
      ...front.context,
      (req, res) => {
        res.set('Allow', allowed.join(', '));
        throw new ApiError(
          SvcStatus.METHOD_NOT_ALLOWED,
          `${req.method}: not supported on ${req.path}; use ${allowed.join(', ')}`,
        );
      },
    ]);
    return { route, chains, wrongMethod };
  });
  return (req, res) => {
    const path = V1.exec(req.url ?? '')?.[1];
    if (path === undefined) return false;
    for (const { route, chains, wrongMethod } of compiled) {
      const match = route.pattern.exec(path);
      if (!match) continue;
      (req as Request).params = paramsOf(route, match);
      (chains.get(req.method ?? '') ?? wrongMethod)(req, res);
      return true;
    }
    return false;
  };
}

function paramsOf(route: SignedRoute, match: RegExpExecArray): Record<string, string> {
  const params: Record<string, string> = {};
  route.params?.forEach((name, i) => {
    const raw = match[i + 1] ?? '';
    try {
      params[name] = decodeURIComponent(raw);
    } catch {
      params[name] = raw;
    }
  });
  return params;
}

/**
 * Runs `handlers` in order as Express's router would for one matching route: each calls `next()` to go on,
 * and a thrown error, a rejected promise or `next(err)` goes to the error handler.
 */
function chain(front: SignedFront, handlers: RequestHandler[]): Listener {
  const { app, beforeError, onError } = front;
  return (rawReq, rawRes) => {
    const req = rawReq as Request;
    const res = rawRes as Response;
    // What express's app.handle and its router do before the first handler runs.
    req.originalUrl = req.url;
    req.baseUrl = '';
    req.res = res;
    res.req = req;
    // A server made with the app's classes (app.ts) made them with these already: changed, they cost V8's caches.
    if (Object.getPrototypeOf(req) !== app.request) Object.setPrototypeOf(req, app.request);
    if (Object.getPrototypeOf(res) !== app.response) Object.setPrototypeOf(res, app.response);
    res.locals ??= Object.create(null) as Response['locals'];
    let index = 0;
    const answer = (err: unknown) => {
      if (res.headersSent) {
        req.log.error({ err }, 'error after the response was sent');
        res.destroy();
        return;
      }
      try {
        onError(err, req, res, () => undefined);
      } catch (thrown) {
        req.log.error({ err: thrown }, 'error handler failed');
        res.destroy();
      }
    };
    const fail = (err: unknown) => {
      const settling = res.headersSent ? undefined : beforeError?.(err, res);
      if (settling) void settling.then(answer, () => answer(err));
      else answer(err);
    };
    const next: NextFunction = (err?: unknown) => {
      if (err !== undefined && err !== null && err !== 'route' && err !== 'router') return fail(err);
      const handler = handlers[index++];
      if (!handler) return;
      try {
        const result = handler(req, res, next) as unknown;
        if (result instanceof Promise) result.catch(fail);
      } catch (thrown) {
        fail(thrown);
      }
    };
    next();
  };
}
