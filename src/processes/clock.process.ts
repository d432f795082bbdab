import type { Config } from '../config/config.js';
import type { Deps } from '../deps.js';
import type { Logger } from '../logger.js';
import { countStoreOnTurn } from '../metrics/order-store.metrics.js';
import { runReconcilePass } from '../services/reconcile.js';
import { runRetentionPass } from '../services/retention.js';
import { inSpan } from '../tracing/tracing.js';
import { assembleProcess } from './assemble.js';
import type { RunningProcess } from './run-process.js';
import { schedulePass, type PassSchedule } from './schedule.js';

/** The clock's passes: what runs, and when. */
export function clockPasses(deps: Deps): PassSchedule[] {
  const { config, logger } = deps;
  return [
    {
      name: 'reconcile',
      when: { cron: config.RECONCILE_CRON },
      // Tracing on, each pass is a trace of its own: its store operations and the orders it enqueues are in it.
      run: (signal) => inSpan('reconcile.pass', {}, () => runReconcilePass(deps, { signal })),
    },
    {
      // Retention (docs/api.md#operations): events and finished deliveries past EVENT_RETENTION_DAYS, expired cursors.
      name: 'retention',
      when: { cron: config.RETENTION_CRON },
      run: (signal) => runRetentionPass(deps, { signal }),
    },
    {
      // The counts behind bookorders_order_items and bookorders_orders_unsettled, for every web process's /metrics.
      name: 'store counts',
      when: { everyMs: config.STORE_COUNTS_EVERY_S * 1000 },
      run: countStoreOnTurn(
        { store: deps.store, redis: deps.redis, prefix: config.REDIS_PREFIX, logger },
        config.STORE_COUNTS_EVERY_S * 1000,
      ),
    },
  ];
}

/** The clock process (Procfile `clock`): its passes, each on its schedule. */
export function startClockProcess(config: Config, logger: Logger): Promise<RunningProcess> {
  return assembleProcess('clock', config, logger, async (deps) => {
    const passes = clockPasses(deps).map((pass) => schedulePass(pass, logger));
    logger.info(
      {
        schedule: config.RECONCILE_CRON,
        retention: config.RETENTION_CRON,
        retentionDays: config.EVENT_RETENTION_DAYS,
      },
      'clock ready',
    );
    return passes;
  });
}
