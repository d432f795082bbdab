import type pg from 'pg';
import { listingsOf } from '../order.rows.js';
import type {
  AttemptBegun,
  ProcessingStore,
  Reservation,
  ReserveResult,
  Settlement,
  StockChange,
} from '../store.port.js';
import { toPricingCatalog, type ListingWithVendorRow } from './catalog.js';
import { BEGIN_ATTEMPT, RESERVE_ORDER, SETTLE_ORDER } from './order-functions.js';
import { inOneTransaction, withTightTransaction, type Statement } from './postgres.pool.js';
import { toStoredItem, toStoredOrder, type ItemRow, type OrderRow } from './postgres.rows.js';

/** Copies per listing, in listing id order: the order every writer locks listings in. */
function perListing(changes: readonly StockChange[]): { ids: number[]; copies: number[] } {
  const sums = new Map<number, number>();
  for (const { listingId, copies } of changes) sums.set(listingId, (sums.get(listingId) ?? 0) + copies);
  const sorted = [...sums.entries()].sort(([a], [b]) => a - b);
  return { ids: sorted.map(([id]) => id), copies: sorted.map(([, n]) => n) };
}

// Each step is one call of a function of the database (order-functions.ts): one round trip.
const BEGIN_ATTEMPT_SQL = `SELECT ${BEGIN_ATTEMPT.name}($1::bigint, $2::bigint, $3::int) AS a`;

const RESERVE_ORDER_SQL = `
  SELECT ${RESERVE_ORDER.name}($1::bigint, $2::text, $3::bigint, $4::text, $5::bigint, $6::bigint,
    $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::int[], $12::int[], $13::int[],
    $14::bigint[], $15::int[], $16::text, $17::text, $18::text) AS result`;

const SETTLE_ORDER_SQL = `
  SELECT ${SETTLE_ORDER.name}($1::bigint, $2::text, $3::boolean, $4::int, $5::boolean, $6::bigint, $7::bigint,
    $8::int, $9::bigint[], $10::int[], $11::text, $12::bigint, $13::text, $14::bigint, $15::text, $16::text,
    $17::text, $18::text) AS settled`;

/** The settle function's arguments, in its order. */
function settleArgs(s: Settlement): unknown[] {
  const give = perListing(s.giveBack);
  return [
    s.orderId,
    s.fromPhase,
    s.zeroTax,
    s.itemStatus,
    s.clearCharges,
    s.now,
    s.leaseFreeAt ?? null,
    s.releasePayment ? 1 : 0,
    give.ids,
    give.copies,
    s.ledger?.entryKey ?? null,
    s.ledger?.orderItemId ?? null,
    s.ledger?.kind ?? null,
    s.ledger?.amountCents ?? null,
    s.ledger?.currency ?? null,
    s.event?.eventId ?? null,
    s.event?.type ?? null,
    s.event?.traceContext ?? null,
  ];
}

interface AttemptRow {
  counted: boolean;
  order: OrderRow;
  items: ItemRow[];
  catalog?: ListingWithVendorRow[] | null;
}

/** The call that applies a reservation while the order is still queued, all of it or none. */
function reservationCall(r: Reservation): Statement {
  const take = perListing(r.take);
  return {
    text: RESERVE_ORDER_SQL,
    values: [
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
      take.ids,
      take.copies,
      r.event?.eventId ?? null,
      r.event?.type ?? null,
      r.event?.traceContext ?? null,
    ],
  };
}

/** The worker's atomic steps: count an attempt, apply a priced reservation, settle. */
export function postgresProcessing(pool: pg.Pool): ProcessingStore {
  return {
    // One transaction of two round trips: BEGIN with the count and everything pricing reads, then the
    // reservation with COMMIT (the listings it locks are held for its own commit only).
    beginAttempt(orderId, { leaseUntil, maxAttempts }, price) {
      const count = { text: BEGIN_ATTEMPT_SQL, values: [orderId, leaseUntil, maxAttempts] };
      return withTightTransaction(pool, count, async (rows, tx): Promise<AttemptBegun | null> => {
        const begun = (rows[0] as { a: AttemptRow | null } | undefined)?.a;
        if (!begun) return null;
        const order = toStoredOrder(begun.order);
        const items = begun.items.map(toStoredItem);
        if (!begun.catalog) return { order, items, catalog: null, reserved: null };
        const catalog = toPricingCatalog(begun.catalog, listingsOf(items));
        if (!price) return { order, items, catalog, reserved: null };
        // The order's row lock is held since the count: the reservation finds it queued. Short of stock, it
        // writes nothing, and the count commits.
        const [reserved] = await tx.commitWith<{ result: ReserveResult }>(
          reservationCall(price({ order, items, catalog })),
        );
        return { order, items, catalog, reserved: reserved!.result === 'short' ? 'short' : 'applied' };
      });
    },
    async reserve(reservation) {
      const { text, values } = reservationCall(reservation);
      const { rows } = await pool.query<{ result: ReserveResult }>(text, [...values]);
      return rows[0]!.result;
    },
    async settle(s: Settlement) {
      const { rows } = await pool.query<{ settled: boolean }>(SETTLE_ORDER_SQL, settleArgs(s));
      return rows[0]?.settled === true;
    },
    // One transaction of one round trip; orders in id order, as every writer of several orders locks them.
    async settleMany(settlements) {
      const order = settlements.map((s, i) => ({ s, i })).sort((a, b) => a.s.orderId - b.s.orderId);
      const results = await inOneTransaction(
        pool,
        order.map(({ s }) => ({ text: SETTLE_ORDER_SQL, values: settleArgs(s) })),
      );
      const settled: boolean[] = [];
      order.forEach(({ i }, n) => (settled[i] = results[n]?.[0]?.settled === true));
      return settled;
    },
    async ledgerHas(entryKey) {
      const { rowCount } = await pool.query('SELECT 1 FROM ledger_entries WHERE entry_key = $1', [entryKey]);
      return rowCount === 1;
    },
  };
}
