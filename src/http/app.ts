import express, { type Request, type RequestHandler } from 'express';
import type { Deps } from '../deps.js';
import { marketplaceDomains } from '../domain/marketplace.js';
import { authenticate } from './auth.js';
import { ApiError, errorHandler } from './errors.js';
import { createOrderHistoryRouter } from './order-history.routes.js';
import { postOrderBatch } from './order-batches.routes.js';
import { postOrder } from './orders.routes.js';
import { openApiDocument } from './openapi.js';
import { requestContext } from './request-context.js';
import { SvcStatus } from './status-codes.js';

export interface AppOptions {
  /** Middlewares that see every request first (request metrics). */
  first?: RequestHandler[];
  /** Middlewares that run after authentication (rate limits). */
  afterAuth?: RequestHandler[];
  /** Extra routes outside /v1 (metrics, dashboard). */
  extend?: (app: express.Express) => void;
}

const MAX_BODY_BYTES = 1024 * 1024;
const KNOWN_PATHS: [RegExp, string[]][] = [
  [/^\/orders\/?$/, ['GET', 'HEAD', 'POST']],
  [/^\/orders\/[^/]+\/?$/, ['GET', 'HEAD']],
  [/^\/order-batches\/?$/, ['POST']],
];

/** Content negotiation, with the common cases (no Accept, JSON, anything) answered without parsing. */
function acceptsJson(req: Request): boolean {
  const accept = req.headers.accept;
  if (!accept || accept === '*/*' || accept === 'application/json') return true;
  return Boolean(req.accepts('application/json'));
}

/** A body announced larger than the limit is refused at once, before a byte of it is read (and never read). */
const announcedBodyLimit: RequestHandler = (req, _res, next) => {
  if (Number(req.get('content-length') ?? 0) > MAX_BODY_BYTES)
    throw new ApiError(SvcStatus.TOO_LARGE, 'body: larger than 1 MiB (Content-Length)');
  next();
};

/** Unknown paths are 4042 and wrong methods 4050 before anyone is asked to authenticate. */
const routeGuard: RequestHandler = (req, res, next) => {
  const known = KNOWN_PATHS.find(([pattern]) => pattern.test(req.path));
  if (!known)
    throw new ApiError(
      SvcStatus.NO_SUCH_RESOURCE,
      `${req.method} ${req.originalUrl.split('?')[0]}: no such resource`,
    );
  if (!known[1].includes(req.method)) {
    res.set('Allow', known[1].join(', '));
    throw new ApiError(
      SvcStatus.METHOD_NOT_ALLOWED,
      `${req.method}: not supported on ${req.path}; use ${known[1].join(', ')}`,
    );
  }
  if (!acceptsJson(req)) throw new ApiError(SvcStatus.NOT_ACCEPTABLE, 'Accept: must allow application/json');
  next();
};

/** The whole HTTP front; it never listens (server.ts does), so tests hand it to supertest. */
export function createApp(deps: Deps, options: AppOptions = {}): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('trust proxy', deps.config.TRUST_PROXY);
  for (const middleware of options.first ?? []) app.use(middleware);
  app.use(requestContext(deps.logger, app.request));

  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/readyz', readiness(deps));
  const openApi = openApiDocument([...marketplaceDomains(deps.config.marketplaceNames).keys()]);
  app.get('/v1/openapi.json', (_req, res) => void res.json(openApi));
  options.extend?.(app);

  const v1 = express.Router();
  v1.use(routeGuard);
  v1.use(announcedBodyLimit);
  v1.use(express.raw({ type: () => true, limit: MAX_BODY_BYTES }));
  v1.use(
    authenticate({
      clients: deps.store.clients,
      authLockout: deps.authLockout,
      clock: deps.clock,
      maxSkewS: deps.config.AUTH_MAX_SKEW_S,
    }),
  );
  for (const middleware of options.afterAuth ?? []) v1.use(middleware);
  v1.post('/orders', postOrder({ ...deps, orderWaitMs: deps.config.ORDER_WAIT_MS }));
  v1.post('/order-batches', postOrderBatch(deps));
  v1.use('/orders', createOrderHistoryRouter(deps));
  app.use('/v1', v1);

  app.use((req) => {
    throw new ApiError(SvcStatus.NO_SUCH_RESOURCE, `${req.method} ${req.path}: no such resource`);
  });
  app.use(errorHandler);
  return app;
}

function readiness(deps: Pick<Deps, 'store' | 'redis'>): RequestHandler {
  return async (_req, res) => {
    const down: string[] = [];
    try {
      await withTimeout(deps.store.ping(), 1000);
    } catch {
      down.push(deps.store.kind);
    }
    try {
      await withTimeout(deps.redis.ping(), 1000);
    } catch {
      down.push('redis');
    }
    res
      .status(down.length ? 503 : 200)
      .json(down.length ? { status: 'unavailable', down } : { status: 'ready' });
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error('timeout')), ms).unref()),
  ]);
}
