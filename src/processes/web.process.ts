// One web process: the HTTP app and its start and stop. Loaded (src/processes/run-process.ts) only where it serves
// (a single web process, or a worker of the cluster): a cluster's primary never loads the app it does not run.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { REQUESTS_WAIT_MS, settledWithin } from '../bounded-stop.js';
import type { Config } from '../config/config.js';
import { whenReady } from '../redis/redis-lock.js';
import type { Deps } from '../deps.js';
import { createApp, readinessCheck, readinessDetail } from '../http/app.js';
import { createHttpServer, createMetricsServer } from '../http/http-server.js';
import { createDeploymentRegistry, metricsListener } from '../http/metrics.js';
import { DASHBOARD_LOCKOUT, Lockout } from '../redis/lockout.js';
import { mountQueueDashboard } from '../http/queue-dashboard.js';
import type { Endpoint } from '../http/endpoints/endpoint.js';
import { rateLimit } from '../http/rate-limit.js';
import { REQUEST_LABELS } from '../http/request-labels.js';
import type { Logger } from '../logger.js';
import { processMetricsSource } from '../metrics/cluster.metrics.js';
import { createProcessMetrics, type ProcessMetrics } from '../metrics/http.metrics.js';
import { assembleProcess, type ProcessPart } from './assemble.js';
import type { RunningProcess } from './run-process.js';

/**
 * The web process's HTTP front: the API of createApp with the per-key rate limit after authentication and the
 * operators' queue dashboard; the request metrics see every request first. /metrics is not here (404): it is
 * served by createMetricsListener on METRICS_PORT. `draining` tells it that the process is stopping.
 */
export function createWebApp(
  deps: Deps,
  processMetrics: ProcessMetrics = createProcessMetrics(REQUEST_LABELS),
  draining?: () => boolean,
) {
  const { config } = deps;
  const limit =
    config.RATE_LIMIT_PER_S > 0
      ? rateLimit({
          redis: deps.redis,
          prefix: config.REDIS_PREFIX,
          perSecond: config.RATE_LIMIT_PER_S,
          clock: deps.clock,
          logger: deps.logger,
        })
      : undefined;
  const afterAuth = limit && ((endpoint: Endpoint) => [limit(endpoint)]);
  return createApp(deps, {
    observe: processMetrics.observe,
    afterAuth,
    draining,
    extend(app) {
      const { ADMIN_USER: user, ADMIN_PASSWORD: password } = config;
      const lockout = new Lockout(deps.redis, config.REDIS_PREFIX, DASHBOARD_LOCKOUT, deps.logger);
      mountQueueDashboard(app, { queues: [deps.queue.queue], user, password, lockout, clock: deps.clock });
    },
  });
}

/**
 * GET /metrics for the metrics listener (METRICS_PORT): the series of `processMetrics` (in a cluster, every
 * worker's, summed by the primary) and the deployment-wide ones; a text collected less than `reuseMs` ago is
 * served again.
 */
export function createMetricsListener(deps: Deps, processMetrics: ProcessMetrics, reuseMs = 0) {
  return metricsListener(
    processMetricsSource(processMetrics.registry),
    createDeploymentRegistry(deps),
    reuseMs,
  );
}

/** The metrics listener with the operators' GET /readyz beside /metrics: which server each link is on now. */
function withReadinessDetail(
  metrics: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  deps: Deps,
  draining: () => boolean,
) {
  const detail = readinessDetail(deps, readinessCheck(deps), draining);
  return (req: IncomingMessage, res: ServerResponse) =>
    req.method === 'GET' && (req.url ?? '').split('?')[0] === '/readyz'
      ? detail(req, res)
      : metrics(req, res);
}

/** Listens on `port` and `host`; resolves once listening (in a cluster worker, on the primary's shared socket). */
async function listening(server: Server, port: number, host: string | undefined): Promise<number> {
  server.listen(port, host);
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const address = server.address();
  return typeof address === 'object' && address ? address.port : port;
}

const REDIS_READY_WAIT_MS = 10_000;

/** Starts one web process; resolves with a function that stops it cleanly. */
export function startWebProcess(config: Config, logger: Logger): Promise<RunningProcess> {
  return assembleProcess('web', config, logger, async (deps) => [await serveWeb(deps)], {
    withOutcomes: true,
  });
}

/** The web's listeners: METRICS_PORT, then the API on PORT. */
async function serveWeb(deps: Deps): Promise<ProcessPart> {
  const { config, logger } = deps;
  // Signed requests need Redis for their lockout checks: listen once it is ready (or, bounded, fail open).
  await whenReady(deps.redis, REDIS_READY_WAIT_MS).catch((err: Error) =>
    logger.warn({ err: err.message }, 'web listening before redis is ready; lockout checks fail open'),
  );
  const processMetrics = createProcessMetrics(REQUEST_LABELS);
  let draining = false;
  const isDraining = () => draining;
  // Metrics first: a web process whose metrics port is taken stops before it takes API requests. In a
  // WEB_CONCURRENCY cluster every worker listens on the same METRICS_PORT, which node's cluster turns into one
  // listener, the primary's, handing each scrape to one worker; that worker answers for the whole cluster.
  // Prometheus keeps its connection to a target open between scrapes (15 s or 1 min apart); node's default of 5 s
  // closed it before each, so that every scrape paid a new connection. Its connections are bounded (see there).
  const metricsServer = createMetricsServer(
    withReadinessDetail(
      createMetricsListener(deps, processMetrics, config.METRICS_REUSE_MS),
      deps,
      isDraining,
    ),
  );
  const metricsPort = await listening(metricsServer, config.METRICS_PORT, config.METRICS_HOST);
  const server = createHttpServer(createWebApp(deps, processMetrics, isDraining), config, logger);
  const port = await listening(server, config.PORT, config.HOST).catch((err: unknown) => {
    metricsServer.close();
    throw err;
  });
  logger.info(
    { port, metricsPort, metrics: `http://${hostForUrl(config.METRICS_HOST)}:${metricsPort}/metrics` },
    'web listening',
  );
  return {
    async stop() {
      // The drain: /readyz says 503 and every answer closes its connection, while the process serves as before,
      // until the balancer has seen it and sends new connections elsewhere. Closed at once, a kept-alive
      // connection could be closed just as its caller sends on it, and the caller would see it closed unanswered.
      draining = true;
      logger.info({ drainMs: config.SHUTDOWN_DRAIN_MS }, 'draining');
      await sleep(config.SHUTDOWN_DRAIN_MS);
      // Then stop taking connections and let requests in flight finish; a connection is closed as soon as it is
      // idle, and those still busy after REQUESTS_WAIT_MS are closed all the same (the hard stop).
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      const idle = setInterval(() => server.closeIdleConnections(), 100);
      await settledWithin(closed, REQUESTS_WAIT_MS).finally(() => clearInterval(idle));
      server.closeAllConnections();
      await closed;
      metricsServer.closeAllConnections();
      await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
    },
  };
}

const hostForUrl = (host: string) => (host.includes(':') ? `[${host}]` : host);
