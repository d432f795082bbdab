import type pg from 'pg';
import { listingsOf } from '../order.rows.js';
import type { AttemptBegun, ProcessingStore, Reservation, Settlement, StockChange } from '../store.port.js';
import { writeLedger } from './ledger.js';
import { recordEvent } from './webhooks.js';
import { readPricingCatalog } from './catalog.js';
import { readOrder } from './orders.js';
import { withTransaction } from './postgres.pool.js';
import { toStoredItem, toStoredOrder, type ItemRow, type OrderRow } from './postgres.rows.js';

/** Raised inside a reservation to roll it back whole when a listing no longer has the stock. */
class ShortOfStock extends Error {}

// The phase guard takes the order's row lock; the items are priced (and those rejected moved out of QUEUED)
// only when it matched. A CTE that writes runs to completion whether or not the final SELECT reads it.
const RESERVE_SQL = `
  WITH reserved AS (
    UPDATE orders SET phase = $2, tax_cents = $3, tax_model = $4, total_cents = $5
     WHERE order_id = $1 AND phase = 'queued'
    RETURNING order_id),
  priced AS (
    UPDATE order_items i
       SET cost_cents = u.cost_cents, shipcost_cents = u.shipcost_cents, tax_cents = u.tax_cents,
           min_days = u.min_days, max_days = u.max_days,
           status = CASE WHEN i.status = 1 AND u.status <> 1 THEN u.status ELSE i.status END,
           updated_at = CASE WHEN i.status = 1 AND u.status <> 1 THEN $6 ELSE i.updated_at END,
           status_changed_at = CASE WHEN i.status = 1 AND u.status <> 1 THEN $6 ELSE i.status_changed_at END
      FROM reserved r,
           unnest($7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::int[], $12::int[], $13::int[])
             AS u(order_item_id, cost_cents, shipcost_cents, tax_cents, min_days, max_days, status)
     WHERE i.order_id = r.order_id AND i.order_item_id = u.order_item_id)
  SELECT count(*) AS n FROM reserved`;

const SETTLE_SQL = `
  WITH settled AS (
    UPDATE orders SET phase = 'settled', payment_version = payment_version + $8::int,
           tax_cents = CASE WHEN $3::boolean AND tax_cents IS NOT NULL THEN 0 ELSE tax_cents END
     WHERE order_id = $1 AND phase = $2
       AND ($7::bigint IS NULL OR lease_until IS NULL OR lease_until <= $7::bigint)
    RETURNING order_id),
  moved AS (
    UPDATE order_items i
       SET status = $4, updated_at = $6, status_changed_at = $6,
           shipcost_cents = CASE WHEN $5::boolean THEN 0 ELSE i.shipcost_cents END,
           tax_cents = CASE WHEN $5::boolean THEN 0 ELSE i.tax_cents END
      FROM settled s
     WHERE i.order_id = s.order_id AND i.status = 1)
  SELECT count(*) AS n FROM settled`;

/** Copies per listing, in listing id order: the order every writer locks listings in. */
function perListing(changes: readonly StockChange[]): { ids: number[]; copies: number[] } {
  const sums = new Map<number, number>();
  for (const { listingId, copies } of changes) sums.set(listingId, (sums.get(listingId) ?? 0) + copies);
  const sorted = [...sums.entries()].sort(([a], [b]) => a - b);
  return { ids: sorted.map(([id]) => id), copies: sorted.map(([, n]) => n) };
}

// Each guarded by the stock it needs: a listing that no longer has it is left out of the row count.
const TAKE_SQL = `
  UPDATE listings l SET stock = l.stock - t.copies
    FROM unnest($1::bigint[], $2::int[]) AS t(listing_id, copies)
   WHERE l.listing_id = t.listing_id AND l.stock >= t.copies`;

const GIVE_BACK_SQL = `
  UPDATE listings l SET stock = l.stock + t.copies
    FROM unnest($1::bigint[], $2::int[]) AS t(listing_id, copies)
   WHERE l.listing_id = t.listing_id`;

/** Runs TAKE_SQL or GIVE_BACK_SQL after locking the listings in id order; false when a listing was left out. */
async function changeStock(
  tx: pg.PoolClient,
  changes: readonly StockChange[],
  sql: string,
): Promise<boolean> {
  const { ids, copies } = perListing(changes);
  if (ids.length === 0) return true;
  await tx.query(
    'SELECT 1 FROM listings WHERE listing_id = ANY($1::bigint[]) ORDER BY listing_id FOR UPDATE',
    [ids],
  );
  const changed = await tx.query(sql, [ids, copies]);
  return changed.rowCount === ids.length;
}

const reserveParams = (r: Reservation): unknown[] => [
  r.orderId,
  r.phase,
  r.taxCents,
  r.taxModel,
  r.totalCents,
  r.now,
  r.items.map((i) => i.orderItemId),
  r.items.map((i) => i.costCents),
  r.items.map((i) => i.shipcostCents),
  r.items.map((i) => i.taxCents),
  r.items.map((i) => i.minDays),
  r.items.map((i) => i.maxDays),
  r.items.map((i) => i.status),
];

/** Applies a reservation while the order is still queued; throws ShortOfStock to roll it back whole. */
async function applyReservation(
  tx: pg.PoolClient,
  reservation: Reservation,
): Promise<'applied' | 'not-queued'> {
  const applied = await tx.query<{ n: number }>(RESERVE_SQL, reserveParams(reservation));
  if (applied.rows[0]?.n !== 1) return 'not-queued';
  const { event, orderId, now } = reservation;
  if (event) await recordEvent(tx, orderId, event, now);
  // Stock is taken last so the listings, the contended rows, stay locked for the shortest time.
  if (!(await changeStock(tx, reservation.take, TAKE_SQL))) throw new ShortOfStock();
  return 'applied';
}

/** The worker's atomic steps: count an attempt, apply a priced reservation, settle. */
export function postgresProcessing(pool: pg.Pool): ProcessingStore {
  return {
    beginAttempt(orderId, { leaseUntil, maxAttempts }, price) {
      return withTransaction(pool, async (tx): Promise<AttemptBegun | null> => {
        const counted = await tx.query<OrderRow>(
          `UPDATE orders SET attempts = attempts + 1,
                  lease_until = CASE WHEN attempts + 1 <= $3 THEN $2 ELSE lease_until END
            WHERE order_id = $1 AND phase <> 'settled' RETURNING *`,
          [orderId, leaseUntil, maxAttempts],
        );
        const row = counted.rows[0];
        if (!row) {
          const settled = await readOrder(tx, orderId);
          return settled && { ...settled, catalog: null, reserved: null };
        }
        // Read under the order's row lock: no reservation or settlement can come between count and items.
        const { rows } = await tx.query<ItemRow>(
          'SELECT * FROM order_items WHERE order_id = $1 ORDER BY order_item_id',
          [orderId],
        );
        const order = toStoredOrder(row);
        const items = rows.map(toStoredItem);
        if (order.phase !== 'queued' || order.attempts > maxAttempts)
          return { order, items, catalog: null, reserved: null };
        const catalog = await readPricingCatalog(tx, listingsOf(items));
        if (!price) return { order, items, catalog, reserved: null };
        // The count commits whatever becomes of the reservation: a savepoint undoes a reservation short of stock.
        await tx.query('SAVEPOINT reservation');
        try {
          await applyReservation(tx, price({ order, items, catalog }));
          return { order, items, catalog, reserved: 'applied' };
        } catch (err) {
          if (!(err instanceof ShortOfStock)) throw err;
          await tx.query('ROLLBACK TO SAVEPOINT reservation');
          return { order, items, catalog, reserved: 'short' };
        }
      });
    },
    async reserve(reservation) {
      try {
        return await withTransaction(pool, (tx) => applyReservation(tx, reservation));
      } catch (err) {
        if (err instanceof ShortOfStock) return 'short';
        throw err;
      }
    },
    settle(s: Settlement) {
      return withTransaction(pool, async (tx) => {
        const settled = await tx.query<{ n: number }>(SETTLE_SQL, [
          s.orderId,
          s.fromPhase,
          s.zeroTax,
          s.itemStatus,
          s.clearCharges,
          s.now,
          s.leaseFreeAt ?? null,
          s.releasePayment ? 1 : 0,
        ]);
        if (settled.rows[0]?.n !== 1) return false;
        await changeStock(tx, s.giveBack, GIVE_BACK_SQL);
        if (s.ledger) await writeLedger(tx, s.ledger, s.now);
        if (s.event) await recordEvent(tx, s.orderId, s.event, s.now);
        return true;
      });
    },
    async ledgerHas(entryKey) {
      const { rowCount } = await pool.query('SELECT 1 FROM ledger_entries WHERE entry_key = $1', [entryKey]);
      return rowCount === 1;
    },
  };
}
