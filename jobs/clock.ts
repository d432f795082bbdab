import cron from 'node-cron';
import { closeDeps, createDeps } from '../src/container.js';
import { runProcess } from '../src/process.js';
import { startProcessHeartbeat } from '../src/metrics/process-heartbeat.js';
import { reconcileDepsOf } from '../src/services/reconcile.js';
import { scheduleReconcile } from './reconcile.job.js';

runProcess('clock', async (config, logger) => {
  if (!cron.validate(config.RECONCILE_CRON))
    throw new Error(`RECONCILE_CRON: '${config.RECONCILE_CRON}' is not a cron expression`);
  const deps = createDeps(config, logger);
  // The command connection already warns of an outage; BullMQ would print each reconnect's stack as well.
  deps.queue.queue.on('error', () => undefined);
  const stopHeartbeat = startProcessHeartbeat(deps.redis, config.QUEUE_PREFIX, 'clock');
  const reconcile = scheduleReconcile(reconcileDepsOf(deps), config.RECONCILE_CRON, logger);
  logger.info({ schedule: config.RECONCILE_CRON }, 'clock ready');
  return {
    async stop() {
      await reconcile.stop();
      await stopHeartbeat();
      await closeDeps(deps);
    },
  };
});
