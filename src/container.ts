import type { Config } from './config/config.js';
import type { Deps } from './deps.js';
import { loadUsdPer } from './domain/money.js';
import { loadTaxRules } from './domain/tax.js';
import { AUTH_LOCKOUT, CARD_LOCKOUT, Lockout } from './redis/lockout.js';
import type { Logger } from './logger.js';
import { createMetricsRecorder } from './metrics/metrics.recorder.js';
import { migrationGate } from './metrics/migration-gate.js';
import { paymentSpanAttributes } from './payments/payment-gateway.js';
import { createSandboxGateway } from './payments/sandbox.gateway.js';
import { createOrderOutcomes } from './queue/order-outcomes.js';
import { createOrderQueue } from './queue/order.queue.js';
import { createBlockingRedis, createRedis } from './redis/redis.js';
import { startSharedClock } from './redis/shared-clock.js';
import { CLOSE_WAIT_MS, settledWithin } from './bounded-stop.js';
import { onServerChange } from './server-changes.js';
import { createBackpressure } from './services/backpressure.js';
import { createOrderCheck } from './services/orders/order-check.js';
import { openStore } from './store/open-store.js';
import { tracedStore } from './store/decorators/traced-store.js';
import { traced } from './tracing/tracing.js';

export interface ContainerOptions {
  clock?: () => number;
  /** Web processes wait for outcomes; workers and the clock do not need the outcomes' subscription. */
  withOutcomes?: boolean;
  /** Names the process to the database server (PostgreSQL's application_name). */
  role?: string;
}

/**
 * Builds the deps of one process: the store (migrated), one Redis connection for commands and one for the
 * queue, and one blocking connection for a web process's outcome events.
 */
export async function createDeps(
  config: Config,
  logger: Logger,
  options: ContainerOptions = {},
): Promise<Deps> {
  // A failover seen by this process: said once, when its first connection reaches the new server.
  onServerChange((link, now, before) =>
    logger.warn(
      { link, server: now.server, was: before, changes: now.changes },
      `${link} server is now ${now.server}`,
    ),
  );
  // A process refuses to migrate while processes a migration would break are alive, and a serving one to start
  // while a step that its reads need is left to `admin migrate`.
  const migration = {
    gate: migrationGate(config),
    stepsDone: options.role === 'web' || options.role === 'worker' || options.role === 'clock',
  };
  const store = tracedStore(
    await openStore(config, options.role, (message) => logger.warn(message), migration),
  );
  // The rule for anything that needs a session (LISTEN, which wakes the webhook relay): DATABASE_DIRECT_URL, or
  // polling when only a transaction pooler is given: said once, at start.
  if (config.DATABASE_URL && config.DATABASE_POOLING === 'transaction' && !config.DATABASE_DIRECT_URL)
    logger.info(
      'DATABASE_POOLING=transaction without DATABASE_DIRECT_URL: no session on the database (no LISTEN); the service polls',
    );
  const redis = createRedis(config, `${config.QUEUE_PREFIX}-cmd`);
  redis.on('error', (err) => logger.warn({ err: err.message }, 'redis connection error'));
  // One clock for the time processes compare (leases, claims, windows): Redis's, unless a test gives its own.
  const sharedClock = options.clock ? undefined : await startSharedClock(redis, logger);
  const clock = options.clock ?? sharedClock!.now;
  const usdPer = loadUsdPer();
  const taxRules = loadTaxRules();
  const cardLockout = new Lockout(redis, config.REDIS_PREFIX, CARD_LOCKOUT, logger);
  const queueConnection = createRedis(config, `${config.QUEUE_PREFIX}-queue`);
  return {
    config,
    logger,
    clock,
    ...(sharedClock ? { sharedClock } : {}),
    store,
    redis,
    payments: traced(
      createSandboxGateway(store, clock, config.SANDBOX_PAYMENT_LATENCY_MS),
      'payment',
      (_, [request]) => paymentSpanAttributes(request),
    ),
    usdPer,
    taxRules,
    authLockout: new Lockout(redis, config.REDIS_PREFIX, AUTH_LOCKOUT, logger),
    cardLockout,
    orderCheck: createOrderCheck({ config, store, usdPer, taxRules, clock, cardLockout }),
    queue: createOrderQueue(queueConnection, config.REDIS_PREFIX, config.MAX_PROCESS_ATTEMPTS, logger),
    outcomes: options.withOutcomes
      ? createOrderOutcomes(
          () => createBlockingRedis(config, `${config.QUEUE_PREFIX}-events`),
          config.REDIS_PREFIX,
          logger,
        )
      : { wait: () => Promise.resolve(undefined), close: () => Promise.resolve() },
    metrics: createMetricsRecorder(redis, config.REDIS_PREFIX, logger),
    // Reads the store only once a real order asks, so workers and the clock never start its timer.
    backpressure: createBackpressure({
      orders: store.orders,
      limit: config.MAX_UNSETTLED_ORDERS,
      perClientLimit: config.MAX_UNSETTLED_PER_CLIENT,
      clock,
      logger,
    }),
  };
}

/** Closes what createDeps opened, in reverse order. */
export async function closeDeps(deps: Deps): Promise<void> {
  deps.backpressure.close();
  deps.sharedClock?.stop();
  // A Redis that went away and came back can leave a close waiting on a reply that never comes: bounded.
  await settledWithin(deps.outcomes.close(), CLOSE_WAIT_MS);
  await settledWithin(deps.queue.close(), CLOSE_WAIT_MS);
  // Samples recorded without waiting (a job's order outcome) are still sent: no sample is lost to a clean stop.
  await settledWithin(deps.metrics.flush(), CLOSE_WAIT_MS);
  deps.redis.disconnect();
  await deps.store.close();
}
