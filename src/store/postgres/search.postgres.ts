import type pg from 'pg';
import type { Currency } from '../../domain/money.js';
import type { OrderKey, OrderView, SearchStore } from '../port/store.port.js';
import { toItemView, type ItemTuple } from '../shared/order.rows.js';
import { canBeId } from './postgres.rows.js';
import { pageLength, scanCaps, type RangeCounts, type ScanCaps } from '../shared/search-plan.js';
import { planSearch, updateRangeProbe } from './search.sql.js';

/** Tests lower or raise the caps to force each path for an update range. */
export type PostgresSearchOptions = Partial<ScanCaps>;

interface PageRow {
  order_id: number;
  created_at: number;
  currency: Currency;
  tax_cents: number | null;
  tax_model: string | null;
  reference_id: string | null;
  item_count: number;
  items: ItemTuple[] | null;
}

const toOrderView = (r: PageRow): OrderView => ({
  orderId: r.order_id,
  createdAt: r.created_at,
  currency: r.currency,
  taxCents: r.tax_cents,
  taxModel: r.tax_model,
  referenceId: r.reference_id,
});

/** Order history search (one statement per page, after a probe for an update range) and the key a cursor names. */
export function postgresSearch(
  pool: pg.Pool,
  cursorKey: Buffer,
  options: PostgresSearchOptions = {},
): SearchStore {
  const caps = scanCaps(options);
  return {
    async search(clientId, criteria) {
      const probe = updateRangeProbe(clientId, criteria, caps);
      const counted = probe ? (await pool.query<RangeCounts>(probe.sql, probe.params)).rows[0] : undefined;
      const plan = planSearch(clientId, criteria, { counted, caps });
      const { rows } = await pool.query<PageRow>(plan.sql, plan.params);
      // The statement read the items of these orders alone (its `kept`, the same rule).
      const length = pageLength(
        rows.map((r) => r.item_count),
        criteria.limit,
        criteria.maxItems,
      );
      return {
        orders: rows.slice(0, length).map((r) => ({
          order: toOrderView(r),
          items: (r.items ?? []).map(toItemView),
        })),
        more: rows.length > length,
      };
    },
    async orderKey(clientId, orderId) {
      if (!canBeId(orderId)) return null;
      const { rows } = await pool.query<OrderKey>(
        'SELECT created_at AS "createdAt", order_id AS "orderId" FROM orders WHERE order_id = $1 AND client_id = $2',
        [orderId, clientId],
      );
      return rows[0] ?? null;
    },
    cursorKey,
  };
}
