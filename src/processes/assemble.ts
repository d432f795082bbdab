import type { Config } from '../config/config.js';
import { closeDeps, createDeps, type ContainerOptions } from '../container.js';
import type { Deps } from '../deps.js';
import type { Logger } from '../logger.js';
import { startProcessHeartbeat } from '../metrics/process-heartbeat.js';
import { PROTOCOL } from '../queue/protocol.js';
import type { ProcessName, RunningProcess } from './run-process.js';

/** A part of a process: an HTTP server, a queue's worker, a scheduled pass. */
export interface ProcessPart {
  /** Finishes the part's work in flight (or hands it back) and closes what the part opened itself. */
  stop(): Promise<void>;
}

/**
 * Every process of the Procfile is put together this way: its deps (src/container.ts), its parts started in
 * order, and its heartbeat for /metrics. Stopping stops the parts side by side, then the heartbeat and the deps.
 */
export async function assembleProcess(
  role: ProcessName,
  config: Config,
  logger: Logger,
  startParts: (deps: Deps) => Promise<ProcessPart[]>,
  options: Pick<ContainerOptions, 'withOutcomes'> = {},
): Promise<RunningProcess> {
  const deps = await createDeps(config, logger, { ...options, role });
  const parts = await startParts(deps);
  const stopHeartbeat = startProcessHeartbeat(deps.redis, config.REDIS_PREFIX, role, deps.clock, {
    store: deps.store.kind,
    schema: deps.store.schemaVersion,
    protocol: PROTOCOL,
  });
  return {
    async stop() {
      await Promise.all(parts.map((part) => part.stop()));
      await stopHeartbeat();
      await closeDeps(deps);
    },
  };
}

/** A command's short-lived process (the admin CLI): its deps for one `use`, closed after it, connections and all. */
export async function withDeps<T>(
  role: string,
  config: Config,
  logger: Logger,
  use: (deps: Deps) => Promise<T>,
): Promise<T> {
  const deps = await createDeps(config, logger, { role });
  try {
    return await use(deps);
  } finally {
    await closeDeps(deps);
    // closeDeps leaves the queue's connection open (long-lived processes exit anyway); a command must end it.
    deps.queue.disconnect();
  }
}
