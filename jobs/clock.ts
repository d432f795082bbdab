import { closeDeps, createDeps } from '../src/container.js';
import { runProcess } from '../src/process.js';
import { scheduleStoreCounts } from '../src/metrics/order-store.metrics.js';
import { startProcessHeartbeat } from '../src/metrics/process-heartbeat.js';
import { scheduleReconcile } from './reconcile.job.js';

runProcess('clock', async (config, logger) => {
  const deps = await createDeps(config, logger, { role: 'clock' });
  const stopHeartbeat = startProcessHeartbeat(deps.redis, config.REDIS_PREFIX, 'clock');
  const reconcile = scheduleReconcile(deps, config.RECONCILE_CRON, logger);
  // The counts behind bookorders_order_items and bookorders_orders_unsettled, for every web process's /metrics.
  const storeCounts = scheduleStoreCounts(
    { store: deps.store, redis: deps.redis, prefix: config.REDIS_PREFIX, logger },
    config.STORE_COUNTS_EVERY_S * 1000,
  );
  logger.info({ schedule: config.RECONCILE_CRON }, 'clock ready');
  return {
    async stop() {
      await reconcile.stop();
      await storeCounts.stop();
      await stopHeartbeat();
      await closeDeps(deps);
    },
  };
});
