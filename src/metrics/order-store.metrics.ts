import { Gauge, type Registry } from 'prom-client';
import { ItemStatus } from '../domain/item-status.js';
import type { Db } from '../store/db.js';

const STATUS_NAMES = new Map<number, string>(Object.entries(ItemStatus).map(([name, code]) => [code, name]));

/**
 * Gauges read from SQLite at scrape time, so they hold whichever process changed the rows: items by status
 * (a scan of the status index, milliseconds for a million items) and orders not yet settled by phase.
 */
export function registerOrderStoreGauges(db: Db, registry: Registry): void {
  const itemsByStatus = db.prepare<[], { status: number; n: number }>(
    'SELECT status, count(*) AS n FROM order_items GROUP BY status',
  );
  // orders_unsettled is a partial index on exactly these rows.
  const unsettledByPhase = db.prepare<[], { phase: string; n: number }>(
    "SELECT phase, count(*) AS n FROM orders WHERE phase <> 'settled' GROUP BY phase",
  );
  new Gauge({
    name: 'bookorders_order_items',
    help: 'Order items in the store, by current status code and name',
    labelNames: ['status', 'name'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const { status, n } of itemsByStatus.all())
        this.set({ status: String(status), name: STATUS_NAMES.get(status) ?? 'UNKNOWN' }, n);
    },
  });
  new Gauge({
    name: 'bookorders_orders_unsettled',
    help: 'Accepted orders a worker has not settled yet, by phase (queued: nothing taken; reserved: paying)',
    labelNames: ['phase'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const phase of ['queued', 'reserved']) this.set({ phase }, 0);
      for (const { phase, n } of unsettledByPhase.all()) this.set({ phase }, n);
    },
  });
}
