// The processes of the Procfile, each run by a one-line entry: src/server.ts (web), workers/order.worker.ts
// (worker) and jobs/clock.ts (clock).
import cluster from 'node:cluster';
import { ConfigError, assertDataFolder, loadConfig, type Config } from '../config/config.js';
import { createLogger, type Logger } from '../logger.js';
import { flushTracing } from '../tracing/tracing.js';

export interface RunningProcess {
  /** Finishes the work in flight (or hands it back) and closes every connection. */
  stop(): Promise<void>;
}

type StartProcess = (config: Config, logger: Logger) => Promise<RunningProcess>;

// Each process loads only its own modules: a worker never loads the HTTP app, a cluster's primary not even that.
const PROCESSES = {
  web: async (config, logger) =>
    cluster.isPrimary && config.WEB_CONCURRENCY > 1
      ? (await import('./web-cluster.process.js')).startWebCluster(config, logger)
      : (await import('./web.process.js')).startWebProcess(config, logger),
  worker: async (config, logger) => (await import('./worker.process.js')).startWorkerProcess(config, logger),
  clock: async (config, logger) => (await import('./clock.process.js')).startClockProcess(config, logger),
} satisfies Record<string, StartProcess>;

export type ProcessName = keyof typeof PROCESSES;

const SHUTDOWN_GRACE_MS = 30_000;

/**
 * Runs a process of the Procfile: config parsed once (a bad value stops the start naming the variable), then on
 * SIGTERM or SIGINT the stop function finishes in-flight work and the process exits 0.
 */
export function runProcess(name: ProcessName) {
  const start: StartProcess = PROCESSES[name];
  let config: Config;
  try {
    config = loadConfig(process.env);
    assertDataFolder(config);
  } catch (err) {
    process.stderr.write(`${name}: ${err instanceof ConfigError ? err.message : String(err)}\n`);
    process.exit(1);
  }
  const logger = createLogger(config, name);
  // Signals are handled from the first moment: one that arrives while the process starts stops it once started.
  let stopping: string | null = null;
  let stop: (() => Promise<void>) | null = null;
  const shutdown = () => {
    if (!stop || !stopping) return;
    logger.info({ signal: stopping }, 'shutting down');
    setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS).unref();
    // The spans still buffered are exported last (nothing to do when tracing is off).
    stop().then(
      () => flushTracing().finally(() => process.exit(0)),
      (err: unknown) => {
        logger.error({ err }, 'unclean shutdown');
        process.exit(1);
      },
    );
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      stopping ??= signal;
      shutdown();
    });
  }
  const starting = guardStoreClients(config, logger).then(() => start(config, logger));
  starting.then(
    (started) => {
      stop = started.stop;
      shutdown();
    },
    (err: unknown) => {
      // One line naming the cause (a store that cannot be opened, a key that opens nothing); the stack only when
      // debugging, as the admin CLI does.
      const debug = config.LOG_LEVEL === 'debug' || config.LOG_LEVEL === 'trace';
      if (debug) logger.fatal({ err }, 'failed to start');
      else logger.fatal(`failed to start: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}

/**
 * On PostgreSQL, a client error that no listener took (its server restarted, failed over or ended the session) is
 * logged in one line and the process goes on (client-errors.ts): only what leaves the process unable to tell its
 * state, such as SQLite's failed flush of its log, ends it. Loaded only where the store is PostgreSQL.
 */
async function guardStoreClients(config: Config, logger: Logger): Promise<void> {
  if (!config.DATABASE_URL) return;
  const { guardPostgresClients } = await import('../store/postgres/client-errors.js');
  guardPostgresClients(({ code, message }) =>
    logger.error({ code }, `PostgreSQL connection error with no handler, the process goes on: ${message}`),
  );
}
