// The web's side of the store counts (order-store.metrics.ts): gauges of what the clock published last. Kept apart
// so that the clock, which only counts and publishes, never loads prom-client (see process-heartbeats.metrics.ts).
import { Gauge, type Registry } from 'prom-client';
import { ItemStatus } from '../domain/item-status.js';
import { countsKey, type PublishedCounts } from './order-store.metrics.js';
import type { StoreCounts } from '../store/port/store.port.js';
import type { ScrapeReads } from './scrape-reads.js';

const STATUS_NAMES = new Map<number, string>(Object.entries(ItemStatus).map(([name, code]) => [code, name]));

/**
 * Gauges of what the clock published last: items by status, unsettled orders by phase, and the counts' age. No
 * series before a clock has published (no clock has run yet on this Redis). `reads`: the scrape's batched reads.
 */
export function registerOrderStoreGauges(
  reads: Pick<ScrapeReads, 'get'>,
  prefix: string,
  registry: Registry,
): void {
  // A scrape collects every gauge in one tick: they share the read in flight, and the next scrape reads again.
  let pending: Promise<PublishedCounts | null> | null = null;
  const counts = () =>
    (pending ??= reads
      .get(countsKey(prefix))
      .then((text) => (text ? (JSON.parse(text) as PublishedCounts) : null))
      .catch(() => null)
      .finally(() => {
        pending = null;
      }));
  new Gauge({
    name: 'bookorders_order_items',
    help: 'Order items in the store, by current status code and name (counted by the clock every STORE_COUNTS_EVERY_S)',
    labelNames: ['status', 'name'] as const,
    registers: [registry],
    async collect() {
      const published = await counts();
      this.reset();
      for (const { status, count } of published?.itemsByStatus ?? [])
        this.set({ status: String(status), name: STATUS_NAMES.get(status) ?? 'UNKNOWN' }, Number(count));
    },
  });
  /** A gauge of the unsettled orders by phase: `of` each phase's figure; absent where `of` gives none. */
  const unsettledGauge = (
    name: string,
    help: string,
    of: (c: StoreCounts['unsettledByPhase'][number]) => number,
  ) =>
    new Gauge({
      name,
      help,
      labelNames: ['phase'] as const,
      registers: [registry],
      async collect() {
        const published = await counts();
        this.reset();
        if (!published || published.unsettledByPhase.some((c) => of(c) === undefined)) return;
        for (const phase of ['queued', 'reserved']) this.set({ phase }, 0);
        for (const c of published.unsettledByPhase) this.set({ phase: c.phase }, Number(of(c)));
      },
    });
  unsettledGauge(
    'bookorders_orders_unsettled',
    'Accepted orders a worker has not settled yet, by phase (queued: nothing taken; reserved: paying; counted by the clock)',
    (c) => c.count,
  );
  // What backpressure counts (MAX_UNSETTLED_ORDERS is a number of items): absent while the counts published
  // last came from a clock of an older version, which counted orders only (no `items`).
  unsettledGauge(
    'bookorders_order_items_unsettled',
    'Items of the orders a worker has not settled yet, by phase: what MAX_UNSETTLED_ORDERS bounds (counted by the clock)',
    (c) => c.items,
  );
  new Gauge({
    name: 'bookorders_store_counts_age_seconds',
    help: 'Age of the counts behind bookorders_order_items and bookorders_orders_unsettled (the clock refreshes them)',
    registers: [registry],
    async collect() {
      const published = await counts();
      this.reset();
      if (published) this.set(Math.max(0, (Date.now() - published.at) / 1000));
    },
  });
}
