// The web entry's primary when WEB_CONCURRENCY > 1: it loads only what forking and supervising needs, and each
// worker of the cluster loads the app (web.process.ts). Loading the app in the primary too, every module of it
// compiled again under tsx in tests, put a whole app load before the workers' own: on a loaded two-core machine
// the cluster was then not listening within the tests' 30 s.
import cluster, { type Worker } from 'node:cluster';
import type { Config } from '../config/config.js';
import type { Logger } from '../logger.js';
import { serveClusterMetrics } from '../metrics/cluster.metrics.js';
import type { RunningProcess } from './run-process.js';

const RESTART_DELAY_MS = 1000;

/**
 * WEB_CONCURRENCY > 1: this primary forks that many web processes sharing the port (node:cluster), starts
 * another when one dies, sums their metrics over IPC for the one METRICS_PORT listener they share, and on stop
 * hands SIGTERM to each and waits.
 */
export async function startWebCluster(config: Config, logger: Logger): Promise<RunningProcess> {
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
          // Two listeners each: METRICS_PORT first, then PORT (web.process.ts).
          let listeners = 0;
          worker.on('listening', () => ++listeners === 2 && resolve());
          worker.once('exit', (code) => reject(new Error(`web worker exited with ${code} before listening`)));
        }),
    ),
  );
  logger.info(
    { workers: config.WEB_CONCURRENCY, port: config.PORT, metricsPort: config.METRICS_PORT },
    'web cluster listening',
  );
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
