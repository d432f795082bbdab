import type { Config } from './config.js';
import type { Deps } from './deps.js';
import { loadUsdPer } from './domain/money.js';
import { loadTaxRules } from './domain/tax.js';
import { AUTH_LOCKOUT, CARD_LOCKOUT, Lockout } from './http/lockout.js';
import type { Logger } from './logger.js';
import { createMetricsRecorder } from './metrics/metrics.recorder.js';
import { createSandboxGateway } from './payments/sandbox.gateway.js';
import { createOrderOutcomes } from './queue/order-outcomes.js';
import { createOrderQueue } from './queue/order.queue.js';
import { createBlockingRedis, createRedis } from './queue/redis.js';
import { createOrderIntake } from './services/order-intake.js';
import { createCatalogRepository } from './store/catalog.repository.js';
import { createClientRepository } from './store/client.repository.js';
import { openDb } from './store/db.js';
import { createOrderProcessingRepository } from './store/order-processing.repository.js';
import { createOrderRepository } from './store/order.repository.js';

export interface ContainerOptions {
  clock?: () => number;
  /** Web processes wait for outcomes; workers and the clock do not need the events connection. */
  withOutcomes?: boolean;
}

/** Builds the deps of one process: one SQLite connection, one Redis connection for commands, one blocking. */
export function createDeps(config: Config, logger: Logger, options: ContainerOptions = {}): Deps {
  const clock = options.clock ?? Date.now;
  const db = openDb(config.DB_PATH);
  const redis = createRedis(config.REDIS_URL, `${config.QUEUE_PREFIX}-cmd`);
  redis.on('error', (err) => logger.warn({ err: err.message }, 'redis connection error'));
  const clients = createClientRepository(db, clock);
  const catalog = createCatalogRepository(db);
  const usdPer = loadUsdPer();
  const taxRules = loadTaxRules();
  const cardLockout = new Lockout(redis, config.QUEUE_PREFIX, CARD_LOCKOUT, logger);
  const queueConnection = createRedis(config.REDIS_URL, `${config.QUEUE_PREFIX}-queue`);
  return {
    config,
    logger,
    clock,
    db,
    redis,
    clients,
    catalog,
    orders: createOrderRepository(db),
    processing: createOrderProcessingRepository(db, catalog),
    payments: createSandboxGateway(db, clock, config.SANDBOX_PAYMENT_LATENCY_MS),
    usdPer,
    taxRules,
    authLockout: new Lockout(redis, config.QUEUE_PREFIX, AUTH_LOCKOUT, logger),
    cardLockout,
    intake: createOrderIntake({ config, clients, catalog, usdPer, taxRules, clock, cardLockout }),
    queue: createOrderQueue(queueConnection, config.QUEUE_PREFIX, config.MAX_PROCESS_ATTEMPTS, logger),
    outcomes: options.withOutcomes
      ? createOrderOutcomes(
          createBlockingRedis(config.REDIS_URL, `${config.QUEUE_PREFIX}-events`),
          config.QUEUE_PREFIX,
          logger,
        )
      : { wait: () => Promise.resolve(), close: () => Promise.resolve() },
    metrics: createMetricsRecorder(redis, config.QUEUE_PREFIX, logger),
  };
}

/** Closes what createDeps opened, in reverse order. */
export async function closeDeps(deps: Deps): Promise<void> {
  await deps.outcomes.close().catch(() => undefined);
  await deps.queue.close().catch(() => undefined);
  deps.redis.disconnect();
  deps.db.close();
}
