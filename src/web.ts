// One web process: the HTTP app and its start and stop. Imported by src/server.ts only where it serves (a single
// web process, or a worker of the cluster): a cluster's primary never loads the app it does not run.
import type { Server } from 'node:http';
import type { Config } from './config.js';
import { closeDeps, createDeps } from './container.js';
import { whenReady } from './redis/redis-lock.js';
import type { Deps } from './deps.js';
import { createApp } from './http/app.js';
import { createHttpServer } from './http/http-server.js';
import { createDeploymentRegistry, metricsRoute } from './http/metrics.js';
import { DASHBOARD_LOCKOUT, Lockout } from './redis/lockout.js';
import { mountQueueDashboard } from './http/queue-dashboard.js';
import { rateLimit } from './http/rate-limit.js';
import type { Logger } from './logger.js';
import { processMetricsSource } from './metrics/cluster.metrics.js';
import { createProcessMetrics, type ProcessMetrics } from './metrics/http.metrics.js';
import { startProcessHeartbeat } from './metrics/process-heartbeat.js';

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
