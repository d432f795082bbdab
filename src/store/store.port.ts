/**
 * The store port: the domain operations every process needs of its database, each atomic, each a Promise of
 * plain camelCase objects. Services decide; an adapter (sqlite/, postgres/) applies a decision in one
 * transaction and reports what it found. Nothing here names a driver, a row or a SQL type.
 */
import type { CatalogStore } from './port/catalog.js';
import type { ClientStore } from './port/clients.js';
import type { ItemStore } from './port/items.js';
import type { LedgerStore } from './port/ledger.js';
import type { OrderStore } from './port/orders.js';
import type { PaymentStore } from './port/payments.js';
import type { ProcessingStore } from './port/processing.js';
import type { ReconcileStore } from './port/reconcile.js';
import type { RetentionStore } from './port/retention.js';
import type { SearchStore } from './port/search.js';
import type { WebhookStore } from './port/webhooks.js';

export type * from './port/clients.js';
export type * from './port/catalog.js';
export type * from './port/orders.js';
export type * from './port/processing.js';
export type * from './port/items.js';
export type * from './port/ledger.js';
export type * from './port/payments.js';
export type * from './port/reconcile.js';
export type * from './port/retention.js';
export type * from './port/search.js';
export type * from './port/webhooks.js';

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
  /** Resolves when the database answers. */
  ping(): Promise<void>;
  /**
   * What the store's own connection runs with, by name, of the settings that decide durability and how long a
   * wait may last (SQLite's `synchronous`, PostgreSQL's time-outs): for tests and operators.
   */
  settings(): Promise<Record<string, string>>;
  close(): Promise<void>;
}
