import { closeDeps, createDeps } from '../src/container.js';
import { runProcess } from '../src/process.js';
import { startProcessHeartbeat } from '../src/metrics/process-heartbeat.js';
import { scheduleReconcile } from './reconcile.job.js';

runProcess('clock', async (config, logger) => {
  const deps = await createDeps(config, logger, { role: 'clock' });
  // The command connection already warns of an outage; BullMQ would print each reconnect's stack as well.
  deps.queue.queue.on('error', () => undefined);
  const stopHeartbeat = startProcessHeartbeat(deps.redis, config.REDIS_PREFIX, 'clock');
  const reconcile = scheduleReconcile(deps, config.RECONCILE_CRON, logger);
  logger.info({ schedule: config.RECONCILE_CRON }, 'clock ready');
  return {
    async stop() {
      await reconcile.stop();
      await stopHeartbeat();
      await closeDeps(deps);
    },
  };
});
