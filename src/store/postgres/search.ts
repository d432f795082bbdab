import crypto from 'node:crypto';
import type pg from 'pg';
import type { Currency } from '../../domain/money.js';
import type { OrderView, SearchStore } from '../store.port.js';
import { toCursor, toItemView, type CursorRow, type ItemTuple } from '../order.rows.js';
import { canBeId } from './postgres.rows.js';
import { NARROW_UPDATE_SCAN } from '../search-plan.js';
import { planSearch, updateRangeProbe } from './search.sql.js';

export interface PostgresSearchOptions {
  /** Tests lower or raise it to force either path for an update range. */
  narrowUpdateScan?: number;
}

interface PageRow {
  order_id: number;
  created_at: number;
  currency: Currency;
  tax_cents: number | null;
  tax_model: string | null;
  reference_id: string | null;
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

/** Order history search (one statement per page, after a probe for an update range) and its paging cursors. */
export function postgresSearch(
  pool: pg.Pool,
  { narrowUpdateScan = NARROW_UPDATE_SCAN }: PostgresSearchOptions = {},
): SearchStore {
  return {
    async search(clientId, criteria) {
      const probe = updateRangeProbe(clientId, criteria, narrowUpdateScan);
      const counted = probe
        ? (await pool.query<{ n: number }>(probe.sql, probe.params)).rows[0]?.n
        : undefined;
      const updateRangeIsNarrow = counted !== undefined && counted < narrowUpdateScan;
      const plan = planSearch(clientId, criteria, { updateRangeIsNarrow });
      const { rows } = await pool.query<PageRow>(plan.sql, plan.params);
      return {
        orders: rows.slice(0, criteria.limit).map((r) => ({
          order: toOrderView(r),
          items: (r.items ?? []).map(toItemView),
        })),
        more: rows.length > criteria.limit,
      };
    },
    async issueCursor(cursor, expiredBefore) {
      await pool.query('DELETE FROM search_cursors WHERE created_at < $1', [expiredBefore]);
      for (;;) {
        const cursorId = crypto.randomInt(1, 2 ** 48 - 1);
        const saved = await pool.query(
          `INSERT INTO search_cursors (cursor_id, client_id, criteria_hash, date_start, date_end, after_created_at,
             after_order_id, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (cursor_id) DO NOTHING`,
          [
            cursorId,
            cursor.clientId,
            cursor.criteriaHash,
            cursor.dateStart,
            cursor.dateEnd,
            cursor.after.createdAt,
            cursor.after.orderId,
            cursor.createdAt,
          ],
        );
        if (saved.rowCount === 1) return cursorId;
      }
    },
    async findCursor(cursorId, clientId, issuedSince) {
      if (!canBeId(cursorId)) return null;
      const { rows } = await pool.query<CursorRow>(
        'SELECT * FROM search_cursors WHERE cursor_id = $1 AND client_id = $2 AND created_at >= $3',
        [cursorId, clientId, issuedSince],
      );
      return rows[0] ? toCursor(rows[0]) : null;
    },
  };
}
