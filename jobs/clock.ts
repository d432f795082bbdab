import { closeDeps, createDeps } from '../src/container.js';
import { runProcess } from '../src/process.js';
import { startProcessHeartbeat } from '../src/metrics/process-heartbeat.js';
import { scheduleReconcile } from './reconcile.job.js';

runProcess('clock', async (config, logger) => {
  const deps = await createDeps(config, logger, { role: 'clock' });
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
