import type { Config } from '../config/config.js';
import type { Logger } from '../logger.js';
import { assembleProcess } from './assemble.js';
import { startOrderWorker } from './order.worker-runner.js';
import type { RunningProcess } from './run-process.js';
import { startWebhookWorker } from './webhook.worker-runner.js';

/**
 * The worker process (Procfile `worker`): the orders' worker and, beside it, the webhooks' (its own queue,
 * connection and concurrency, and the relay from the store's outbox to that queue).
 */
export function startWorkerProcess(config: Config, logger: Logger): Promise<RunningProcess> {
  return assembleProcess('worker', config, logger, async (deps) => {
    const parts = [await startOrderWorker(deps), await startWebhookWorker(deps)];
    logger.info({ concurrency: config.WORKER_CONCURRENCY }, 'worker ready');
    return parts;
  });
}
