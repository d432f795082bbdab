import cluster, { type Worker } from 'node:cluster';
import type { Server } from 'node:http';
import type { Config } from './config.js';
import { closeDeps, createDeps } from './container.js';
import { whenReady } from './queue/redis-lock.js';
import type { Deps } from './deps.js';
import { createApp } from './http/app.js';
import { createHttpServer } from './http/http-server.js';
import { createDeploymentRegistry, metricsRoute } from './http/metrics.js';
import { DASHBOARD_LOCKOUT, Lockout } from './http/lockout.js';
import { mountQueueDashboard } from './http/queue-dashboard.js';
import { rateLimit } from './http/rate-limit.js';
import type { Logger } from './logger.js';
import { processMetricsSource, serveClusterMetrics } from './metrics/cluster.metrics.js';
import { createProcessMetrics, type ProcessMetrics } from './metrics/http.metrics.js';
import { startProcessHeartbeat } from './metrics/process-heartbeat.js';
import { runProcess } from './process.js';

const RESTART_DELAY_MS = 1000;

/**
 * The web process's HTTP front: the API of createApp with the per-key rate limit after authentication,
 * GET /metrics and the operators' queue dashboard; the request metrics see every request first.
 */
export function createWebApp(deps: Deps, processMetrics: ProcessMetrics = createProcessMetrics()) {
  const { config } = deps;
  const afterAuth =
    config.RATE_LIMIT_PER_S > 0
      ? [
          rateLimit({
            redis: deps.redis,
            prefix: config.REDIS_PREFIX,
            perSecond: config.RATE_LIMIT_PER_S,
            clock: deps.clock,
            logger: deps.logger,
          }),
        ]
      : [];
  const metrics = metricsRoute(processMetricsSource(processMetrics.registry), createDeploymentRegistry(deps));
  return createApp(deps, {
    observe: processMetrics.observe,
    afterAuth,
    extend(app) {
      app.get('/metrics', metrics);
      const { ADMIN_USER: user, ADMIN_PASSWORD: password } = config;
      const lockout = new Lockout(deps.redis, config.REDIS_PREFIX, DASHBOARD_LOCKOUT, deps.logger);
      mountQueueDashboard(app, { queues: [deps.queue.queue], user, password, lockout, clock: deps.clock });
    },
  });
}

const REDIS_READY_WAIT_MS = 10_000;

/** Starts one web process; resolves with a function that stops it cleanly. */
export async function startWeb(
  config: Config,
  logger: Logger,
): Promise<{ server: Server; stop: () => Promise<void> }> {
  const deps = await createDeps(config, logger, { withOutcomes: true, role: 'web' });
  // Signed requests need Redis for their lockout checks: listen once it is ready (or, bounded, fail open).
  await whenReady(deps.redis, REDIS_READY_WAIT_MS).catch((err: Error) =>
    logger.warn({ err: err.message }, 'web listening before redis is ready; lockout checks fail open'),
  );
  const server = createHttpServer(createWebApp(deps), config, logger).listen(config.PORT, config.HOST);
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const address = server.address();
  const stopHeartbeat = startProcessHeartbeat(deps.redis, config.REDIS_PREFIX, 'web');
  logger.info({ port: typeof address === 'object' ? address?.port : config.PORT }, 'web listening');
  return {
    server,
    async stop() {
      // Stop taking connections and let requests in flight finish; keep-alive connections are closed as
      // soon as they fall idle, so a client mid-request still gets its answer.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      const idle = setInterval(() => server.closeIdleConnections(), 100);
      await closed.finally(() => clearInterval(idle));
      await stopHeartbeat();
      await closeDeps(deps);
    },
  };
}

/**
 * WEB_CONCURRENCY > 1: this primary forks that many web processes sharing the port (node:cluster), starts
 * another when one dies, serves their summed metrics over IPC, and on stop hands SIGTERM to each and waits.
 */
export async function startWebCluster(
  config: Config,
  logger: Logger,
): Promise<{ stop: () => Promise<void> }> {
  serveClusterMetrics(logger);
  let stopping = false;
  const fork = (): Worker => {
    const worker = cluster.fork();
    worker.once('exit', (code, signal) => {
      if (stopping) return;
      logger.warn({ pid: worker.process.pid, code, signal }, 'web worker died; starting another');
      setTimeout(() => !stopping && fork(), RESTART_DELAY_MS);
    });
    return worker;
  };
  const first = Array.from({ length: config.WEB_CONCURRENCY }, fork);
  await Promise.all(
    first.map(
      (worker) =>
        new Promise<void>((resolve, reject) => {
          worker.once('listening', () => resolve());
          worker.once('exit', (code) => reject(new Error(`web worker exited with ${code} before listening`)));
        }),
    ),
  );
  logger.info({ workers: config.WEB_CONCURRENCY, port: config.PORT }, 'web cluster listening');
  return {
    async stop() {
      stopping = true;
      const alive = Object.values(cluster.workers ?? {}).filter((w): w is Worker => !!w && !w.isDead());
      await Promise.all(
        alive.map((worker) => new Promise((resolve) => worker.once('exit', resolve).process.kill('SIGTERM'))),
      );
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runProcess('web', (config, logger) =>
    cluster.isPrimary && config.WEB_CONCURRENCY > 1
      ? startWebCluster(config, logger)
      : startWeb(config, logger),
  );
}
