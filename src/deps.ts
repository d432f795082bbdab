import type { Config } from './config/config.js';
import type { Logger } from './logger.js';
import type { MetricsRecorder } from './metrics/metrics.recorder.js';
import type { UsdPer } from './domain/money.js';
import type { TaxRules } from './domain/tax.js';
import type { Lockout } from './redis/lockout.js';
import type { PaymentGateway } from './payments/payment-gateway.js';
import type { OrderOutcomes } from './queue/order-outcomes.js';
import type { BullOrderQueue } from './queue/order.queue.js';
import type { RedisClient } from './redis/redis.js';
import type { SharedClock } from './redis/shared-clock.js';
import type { Backpressure } from './services/backpressure.js';
import type { OrderCheck } from './services/orders/order-check.js';
import type { Store } from './store/port/store.port.js';

/** Everything with a side effect, built once by an entry point (see container.ts); tests build their own. */
export interface Deps {
  config: Config;
  logger: Logger;
  clock: () => number;
  /** Where `clock` comes from when it is the deployment's shared clock (Redis's time): this host's offset. */
  sharedClock?: Pick<SharedClock, 'offsetMs' | 'stop'>;
  /** The store port: SQLite or PostgreSQL behind the same domain operations. */
  store: Store;
  redis: RedisClient;
  payments: PaymentGateway;
  usdPer: UsdPer;
  taxRules: TaxRules;
  authLockout: Lockout;
  cardLockout: Lockout;
  orderCheck: OrderCheck;
  queue: BullOrderQueue;
  outcomes: OrderOutcomes;
  /** The figure of unsettled orders that refuses real orders past MAX_UNSETTLED_ORDERS. */
  backpressure: Backpressure;
  /** Adds to the deployment-wide metrics in Redis that web processes expose at /metrics. */
  metrics: MetricsRecorder;
}
