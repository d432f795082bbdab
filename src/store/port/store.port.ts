/**
 * The store port: the domain operations every process needs of its database, each atomic, each a Promise of
 * plain camelCase objects. Services decide; an adapter (sqlite/, postgres/) applies a decision in one
 * transaction and reports what it found. Nothing here names a driver, a row or a SQL type.
 */
import type { CatalogStore } from './catalog.port.js';
import type { ClientStore } from './clients.port.js';
import type { ItemStore } from './items.port.js';
import type { LedgerStore } from './ledger.port.js';
import type { MigrationSteps } from './migrations.port.js';
import type { OrderStore } from './orders.port.js';
import type { PaymentStore } from './payments.port.js';
import type { ProcessingStore } from './processing.port.js';
import type { ReconcileStore } from './reconcile.port.js';
import type { RetentionStore } from './retention.port.js';
import type { SearchStore } from './search.port.js';
import type { WebhookStore } from './webhooks.port.js';

export type * from './clients.port.js';
export type * from './catalog.port.js';
export type * from './orders.port.js';
export type * from './processing.port.js';
export type * from './items.port.js';
export type * from './ledger.port.js';
export type * from './payments.port.js';
export type * from './reconcile.port.js';
export type * from './retention.port.js';
export type * from './search.port.js';
export type * from './webhooks.port.js';
export type * from './migrations.port.js';

export interface StoreCounts {
  itemsByStatus: { status: number; count: number }[];
  /** Unsettled orders by phase: how many, and how many items they hold (what backpressure counts). */
  unsettledByPhase: { phase: 'queued' | 'reserved'; count: number; items: number }[];
}

/** The store's ports: the parts whose operations a wrapper (traces, the web's wait for SQLite's lock) wraps. */
export const STORE_PORTS = [
  'clients',
  'catalog',
  'orders',
  'processing',
  'items',
  'payments',
  'ledger',
  'reconcile',
  'search',
  'webhooks',
  'retention',
] as const;

export interface Store {
  /** Which adapter: for logs, /readyz and benchmarks. */
  readonly kind: 'sqlite' | 'postgres';
  readonly clients: ClientStore;
  readonly catalog: CatalogStore;
  readonly orders: OrderStore;
  readonly processing: ProcessingStore;
  readonly items: ItemStore;
  readonly payments: PaymentStore;
  readonly ledger: LedgerStore;
  readonly reconcile: ReconcileStore;
  readonly search: SearchStore;
  readonly webhooks: WebhookStore;
  readonly retention: RetentionStore;
  /** Items by status and unsettled orders by phase: a scan of the store, made by the clock (never per scrape). */
  counts(): Promise<StoreCounts>;
  /** Applies the migrations not applied yet; safe when several processes start at once. Returns their versions. */
  migrate(): Promise<number[]>;
  /** The highest migration this code knows for its store: its processes' heartbeats carry it. */
  readonly schemaVersion: number;
  /** The heavy parts of migrations, which `admin migrate` runs in batches apart from any process's start. */
  readonly steps: MigrationSteps;
  /** Resolves when the database answers. */
  ping(): Promise<void>;
  /**
   * What the store's own connection runs with, by name, of the settings that decide durability and how long a
   * wait may last (SQLite's `synchronous` and its flush before answering, PostgreSQL's time-outs): for tests and
   * operators.
   */
  settings(): Promise<Record<string, string>>;
  close(): Promise<void>;
}
