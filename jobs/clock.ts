import { closeDeps, createDeps } from '../src/container.js';
import { runProcess } from '../src/processes/run-process.js';
import { scheduleStoreCounts } from '../src/metrics/order-store.metrics.js';
import { startProcessHeartbeat } from '../src/metrics/process-heartbeat.js';
import { runRetentionPass } from '../src/services/retention.js';
import { scheduleReconcile } from './reconcile.job.js';
import { schedulePass } from '../src/processes/schedule.js';

runProcess('clock', async (config, logger) => {
  const deps = await createDeps(config, logger, { role: 'clock' });
  const stopHeartbeat = startProcessHeartbeat(deps.redis, config.REDIS_PREFIX, 'clock', deps.clock);
  const reconcile = scheduleReconcile(deps, config.RECONCILE_CRON, logger);
  // The counts behind bookorders_order_items and bookorders_orders_unsettled, for every web process's /metrics.
  const storeCounts = scheduleStoreCounts(
    { store: deps.store, redis: deps.redis, prefix: config.REDIS_PREFIX, logger },
    config.STORE_COUNTS_EVERY_S * 1000,
  );
  // Retention (docs/api.md#operations): events and finished deliveries past EVENT_RETENTION_DAYS, expired cursors.
  const retention = schedulePass('retention', config.RETENTION_CRON, logger, (signal) =>
    runRetentionPass(deps, { signal }),
  );
  logger.info(
    {
      schedule: config.RECONCILE_CRON,
      retention: config.RETENTION_CRON,
      retentionDays: config.EVENT_RETENTION_DAYS,
    },
    'clock ready',
  );
  return {
    async stop() {
      await reconcile.stop();
      await retention.stop();
      await storeCounts.stop();
      await stopHeartbeat();
      await closeDeps(deps);
    },
  };
});
