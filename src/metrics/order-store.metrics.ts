import { Gauge, type Registry } from 'prom-client';
import { ItemStatus } from '../domain/item-status.js';
import type { Store, StoreCounts } from '../store/store.port.js';

const STATUS_NAMES = new Map<number, string>(Object.entries(ItemStatus).map(([name, code]) => [code, name]));

/**
 * Gauges read from the store at scrape time, so they hold whichever process changed the rows: items by
 * status and orders not yet settled by phase.
 */
export function registerOrderStoreGauges(store: Pick<Store, 'counts'>, registry: Registry): void {
  // A scrape collects every gauge in one tick: they share the read in flight, and the next scrape reads again.
  let pending: Promise<StoreCounts> | null = null;
  const counts = () =>
    (pending ??= store.counts().finally(() => {
      pending = null;
    }));
  new Gauge({
    name: 'bookorders_order_items',
    help: 'Order items in the store, by current status code and name',
    labelNames: ['status', 'name'] as const,
    registers: [registry],
    async collect() {
      const { itemsByStatus } = await counts();
      this.reset();
      for (const { status, count } of itemsByStatus)
        this.set({ status: String(status), name: STATUS_NAMES.get(status) ?? 'UNKNOWN' }, count);
    },
  });
  new Gauge({
    name: 'bookorders_orders_unsettled',
    help: 'Accepted orders a worker has not settled yet, by phase (queued: nothing taken; reserved: paying)',
    labelNames: ['phase'] as const,
    registers: [registry],
    async collect() {
      const { unsettledByPhase } = await counts();
      this.reset();
      for (const phase of ['queued', 'reserved']) this.set({ phase }, 0);
      for (const { phase, count } of unsettledByPhase) this.set({ phase }, count);
    },
  });
}
