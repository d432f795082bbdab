import http, { type IncomingMessage, type ServerOptions, type ServerResponse } from 'node:http';
import express, { type Request, type RequestHandler } from 'express';
import type { Deps } from '../deps.js';
import { marketplaceDomains } from '../domain/marketplace.js';
import type { RequestObserver } from '../metrics/http.metrics.js';
import { authenticate } from './auth.js';
import { pathPattern, type Endpoint } from './endpoints/endpoint.js';
import { ENDPOINTS } from './endpoints/index.js';
import { ApiError, errorHandler } from './errors.js';
import { sharedInFlight } from '../services/read-cache.js';
import { openApiDocument } from './openapi.js';
import { queryGuard } from './query-guard.js';
import { chargeBeforeError } from './rate-limit.js';
import { decodeBody, rawBody } from './raw-body.js';
import { requestContext } from './request-context.js';
import { signedRoutes, type SignedRoute } from './signed-routes.js';
import { SvcStatus } from './status-codes.js';
import { CLOCK_SKEW_BOUND_MS } from '../redis/shared-clock.js';
import { serverStates } from '../server-changes.js';

export interface AppOptions {
  /** Told of every request once answered (request metrics). */
  observe?: RequestObserver;
  /** Middlewares that run after authentication (rate limits), made for each endpoint: it may be charged by its body. */
  afterAuth?: (endpoint: Endpoint) => RequestHandler[];
  /** Extra routes outside /v1 (metrics, dashboard). */
  extend?: (app: express.Express) => void;
  /**
   * True once the process is stopping (SIGTERM): /readyz answers 503 and every answer carries `Connection: close`,
   * so that a balancer sends new connections elsewhere and callers open their next one there.
   */
  draining?: () => boolean;
}

const MAX_BODY_BYTES = 1024 * 1024;

/**
 * The service's request listener: Express for everything but the signed paths, which `signedRoutes` answers.
 * `serverOptions`: the request and response classes for its server (createHttpServer), Express's own.
 */
export type App = ((req: IncomingMessage, res: ServerResponse) => void) & {
  express: express.Express;
  serverOptions: Pick<ServerOptions, 'IncomingMessage' | 'ServerResponse'>;
};

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

/** 4060 before anyone is asked to authenticate. */
const acceptGuard: RequestHandler = (req, _res, next) => {
  if (!acceptsJson(req)) throw new ApiError(SvcStatus.NOT_ACCEPTABLE, 'Accept: must allow application/json');
  next();
};

/** The whole HTTP front; it never listens (src/processes/web.process.ts does), so tests hand it to supertest. */
export function createApp(deps: Deps, options: AppOptions = {}): App {
  const app = express();
  const serverOptions = expressClasses(app);
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('trust proxy', deps.config.TRUST_PROXY);
  const context = requestContext(deps.logger, app.request, options.observe);
  app.use(context);

  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/readyz', readiness(deps, options.draining));
  const openApi = openApiDocument([...marketplaceDomains(deps.config.marketplaceNames).keys()]);
  app.get('/v1/openapi.json', (_req, res) => void res.json(openApi));
  options.extend?.(app);
  app.use((req) => {
    throw new ApiError(SvcStatus.NO_SUCH_RESOURCE, `${req.method} ${req.path}: no such resource`);
  });
  app.use(errorHandler);

  const decode = decodeBody(MAX_BODY_BYTES);
  const answerSigned = signedRoutes({
    app,
    context: [context],
    guards: [
      queryGuard,
      acceptGuard,
      announcedBodyLimit,
      rawBody(MAX_BODY_BYTES),
      authenticate({
        clients: deps.store.clients,
        authLockout: deps.authLockout,
        clock: deps.clock,
        maxSkewS: deps.config.AUTH_MAX_SKEW_S,
      }),
    ],
    routes: routesOf(ENDPOINTS, deps, (endpoint) => [...(options.afterAuth?.(endpoint) ?? []), decode]),
    beforeError: chargeBeforeError,
    onError: errorHandler,
  });
  const draining = options.draining ?? (() => false);
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    // Node then closes the connection once this answer is written, and the caller knows not to reuse it.
    if (draining()) res.setHeader('Connection', 'close');
    if (!answerSigned(req, res)) app(req, res);
  };
  return Object.assign(listener, { express: app, serverOptions });
}

/**
 * Request and response classes whose instances are born with Express's prototypes, which become `app`'s. Express
 * gives each request and response its prototype once they are made (Object.setPrototypeOf); V8 then no longer
 * recognises the shapes of the next ones Node's HTTP server makes, and every request paid for lookups missing
 * V8's inline caches, in Node's request, response, stream and event code as in ours. A server made with these
 * classes (createHttpServer) leaves nothing to change: Express keeps a prototype that is already its own.
 */
function expressClasses(app: express.Express): Pick<ServerOptions, 'IncomingMessage' | 'ServerResponse'> {
  class Request extends http.IncomingMessage {}
  class Response extends http.ServerResponse {}
  for (const [made, key] of [
    [Request, 'request'],
    [Response, 'response'],
  ] as const) {
    // What Express made: `app` defined on an object whose prototype holds its methods.
    const own = app[key] as object;
    Object.setPrototypeOf(made.prototype, Object.getPrototypeOf(own));
    Object.defineProperties(made.prototype, Object.getOwnPropertyDescriptors(own));
    (app as { request: object; response: object })[key] = made.prototype;
  }
  return { IncomingMessage: Request, ServerResponse: Response as typeof http.ServerResponse };
}

/**
 * The endpoints as the signed routes answer them: one route per path, with the handlers of each of its methods
 * (in a fixed order, which the Allow header of a refused method lists), each after the guards `before` gives it.
 */
function routesOf(
  endpoints: readonly Endpoint[],
  deps: Deps,
  before: (endpoint: Endpoint) => RequestHandler[],
): SignedRoute[] {
  const routes = new Map<string, SignedRoute>();
  for (const endpoint of [...endpoints].sort((a, b) => a.method.localeCompare(b.method))) {
    let route = routes.get(endpoint.path);
    if (!route) routes.set(endpoint.path, (route = { ...pathPattern(endpoint.path), methods: {} }));
    route.methods[endpoint.method] = [...before(endpoint), ...endpoint.handlers(deps)];
  }
  return [...routes.values()];
}

/**
 * What a readiness check found: the kinds of server that did not answer (`sqlite`, `postgres`, `redis`), or
 * `secrets-key` when the store answers but seals its secrets with a key this process does not hold (a rotation).
 */
export type ReadinessCheck = () => Promise<string[]>;

/** Asks the store and Redis, each within a second; concurrent callers share one check (one of each in flight). */
export function readinessCheck(deps: Pick<Deps, 'store' | 'redis'>): ReadinessCheck {
  return sharedInFlight(async () => {
    const down: string[] = [];
    try {
      await withTimeout(deps.store.ping(), 1000);
    } catch (error) {
      down.push((error as { down?: string }).down ?? deps.store.kind);
    }
    try {
      await withTimeout(deps.redis.ping(), 1000);
    } catch {
      down.push('redis');
    }
    return down;
  });
}

/**
 * GET /readyz on the API port, unsigned: ready or not, what kind of server is down, or draining; never where the
 * servers are (an anonymous caller learns no host or port): the operators' detail is on the metrics port.
 */
function readiness(deps: Pick<Deps, 'store' | 'redis'>, draining = () => false): RequestHandler {
  const check = readinessCheck(deps);
  return async (_req, res) => {
    if (draining()) {
      res.status(503).json({ status: 'draining' });
      return;
    }
    const down = await check();
    res
      .status(down.length ? 503 : 200)
      .json(down.length ? { status: 'unavailable', down } : { status: 'ready' });
  };
}

/**
 * GET /readyz on the metrics port, for operators: the same check, with the server each link is on now (and since
 * when, how often it changed), and a host clock off the shared one by more than the bound (`clockOffsetMs`): the
 * process still serves right, on the shared clock, but the host needs its time fixed.
 */
export function readinessDetail(
  deps: Pick<Deps, 'sharedClock'>,
  check: ReadinessCheck,
  draining = () => false,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (_req, res) => {
    const down = draining() ? [] : await check();
    const servers = Object.fromEntries(
      Object.entries(serverStates()).map(([link, s]) => [
        link,
        { server: s.server, since: new Date(s.since).toISOString(), changes: s.changes },
      ]),
    );
    const offsetMs = deps.sharedClock?.offsetMs() ?? 0;
    const clock = Math.abs(offsetMs) > CLOCK_SKEW_BOUND_MS ? { clockOffsetMs: offsetMs } : {};
    const status = draining() ? 'draining' : down.length ? 'unavailable' : 'ready';
    const body = { status, ...(down.length ? { down } : {}), servers, ...clock };
    res.writeHead(status === 'ready' ? 200 : 503, { 'Content-Type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error('timeout')), ms).unref()),
  ]);
}
