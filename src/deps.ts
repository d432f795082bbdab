import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import type { MetricsRecorder } from './metrics/metrics.recorder.js';
import type { UsdPer } from './domain/money.js';
import type { TaxRules } from './domain/tax.js';
import type { Lockout } from './http/lockout.js';
import type { PaymentGateway } from './payments/payment-gateway.js';
import type { OrderOutcomes } from './queue/order-outcomes.js';
import type { OrderQueue } from './queue/order.queue.js';
import type { OrderIntake } from './services/order-intake.js';
import type { Db } from './store/db.js';
import type { CatalogRepository } from './store/catalog.repository.js';
import type { ClientRepository } from './store/client.repository.js';
import type { OrderProcessingRepository } from './store/order-processing.repository.js';
import type { OrderRepository } from './store/order.repository.js';

/** Everything with a side effect, built once by an entry point (see container.ts); tests build their own. */
export interface Deps {
  config: Config;
  logger: Logger;
  clock: () => number;
  db: Db;
  redis: Redis;
  clients: ClientRepository;
  catalog: CatalogRepository;
  orders: OrderRepository;
  processing: OrderProcessingRepository;
  payments: PaymentGateway;
  usdPer: UsdPer;
  taxRules: TaxRules;
  authLockout: Lockout;
  cardLockout: Lockout;
  intake: OrderIntake;
  queue: OrderQueue;
  outcomes: OrderOutcomes;
  /** Adds to the deployment-wide metrics in Redis that web processes expose at /metrics. */
  metrics: MetricsRecorder;
}
