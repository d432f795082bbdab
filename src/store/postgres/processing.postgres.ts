import type pg from 'pg';
import { listingsOf } from '../shared/order.rows.js';
import { onceEach } from '../port/processing.port.js';
import type {
  AttemptBegun,
  AttemptRequest,
  ProcessingStore,
  Reservation,
  ReserveResult,
  Settlement,
  StockChange,
  StoredItem,
} from '../port/store.port.js';
import { toPricingCatalog, type ListingWithVendorRow } from './catalog.postgres.js';
import { BEGIN_ATTEMPT, COUNT_ATTEMPT_SQL, RESERVE_ORDER, SETTLE_ORDER } from './order-functions.js';
import { inOneTransaction, withTightTransaction, type Statement } from './postgres.pool.js';
import { toStoredOrder, type OrderRow } from './postgres.rows.js';

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
    $14::bigint[], $15::int[], $16::text, $17::text, $18::text, $19::int, $20::bigint) AS result`;

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
  items: StoredItem[];
  catalog?: ListingWithVendorRow[] | null;
}

/** An attempt counted in this transaction and not yet written: the order's count and lease as it made them. */
interface Count {
  attempts: number;
  leaseUntil: number | null;
}

/**
 * The call that applies a reservation while the order is still queued, all of it or none, and writes `count`,
 * the attempt of this transaction, whatever its result.
 */
function reservationCall(r: Reservation, count: Count | null): Statement {
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
      count?.attempts ?? null,
      count?.leaseUntil ?? null,
    ],
  };
}

/** The listings of a group's reservations locked in id order, before any of them is applied. */
const LOCK_LISTINGS_SQL = `SELECT count(*) FROM (SELECT 1 FROM listings WHERE listing_id = ANY($1::bigint[])
   ORDER BY listing_id FOR UPDATE) AS l`;

/** An attempt as its count read it, and the reservation its pricing returned, if any. */
function attemptStart(row: AttemptRow | null | undefined, request: AttemptRequest) {
  if (!row) return { begun: null, reservation: null, count: null };
  const order = toStoredOrder(row.order);
  const items = row.items;
  const count: Count | null = row.counted ? { attempts: order.attempts, leaseUntil: order.leaseUntil } : null;
  if (!row.catalog)
    return { begun: { order, items, catalog: null, reserved: null }, reservation: null, count };
  const catalog = toPricingCatalog(row.catalog, listingsOf(items));
  const begun: AttemptBegun = { order, items, catalog, reserved: null };
  return { begun, reservation: request.price ? request.price({ order, items, catalog }) : null, count };
}

/**
 * Attempts in one transaction of two round trips: BEGIN with each count and everything pricing reads (the
 * orders' row locks taken in id order), then the reservations with COMMIT, after one statement that locks every
 * listing they take in id order (each reservation locks its own in that order too, but one after another they
 * would not be, across the group). The listings' locks are held for that commit only. The orders' row locks are
 * held since the counts, so each reservation finds its order queued; one short of stock writes nothing but its
 * count, and the counts and the other reservations commit. Each count is written once, in its order's
 * reservation or, without one, alone before COMMIT: one UPDATE of each order.
 */
function beginAttempts(pool: pg.Pool) {
  return async (requests: readonly AttemptRequest[]): Promise<(AttemptBegun | null)[]> => {
    onceEach(requests);
    const sorted = [...requests].sort((a, b) => a.orderId - b.orderId);
    const counts = sorted.map(({ orderId, lease }) => ({
      text: BEGIN_ATTEMPT_SQL,
      values: [orderId, lease.leaseUntil, lease.maxAttempts],
    }));
    return withTightTransaction(pool, counts, async (rows, tx) => {
      const starts = sorted.map((request, n) =>
        attemptStart((rows[n]?.[0] as { a: AttemptRow | null } | undefined)?.a, request),
      );
      const reserving = starts.filter((s) => s.reservation !== null);
      const alone = starts
        .filter((s) => s.reservation === null && s.count !== null)
        .map(({ begun, count }) => ({
          text: COUNT_ATTEMPT_SQL,
          values: [begun!.order.orderId, count!.attempts, count!.leaseUntil],
        }));
      if (reserving.length + alone.length > 0) {
        const calls = reserving.map((s) => reservationCall(s.reservation!, s.count));
        const taken = [...new Set(reserving.flatMap((s) => s.reservation!.take.map((t) => t.listingId)))];
        const lock = reserving.length > 1 ? [{ text: LOCK_LISTINGS_SQL, values: [taken] }] : [];
        const results = await tx.commitWith([...lock, ...calls, ...alone]);
        reserving.forEach((s, n) => {
          const result = (results[lock.length + n]?.[0] as { result: ReserveResult } | undefined)?.result;
          s.begun!.reserved = result === 'short' ? 'short' : 'applied';
        });
      }
      const byOrder = new Map(sorted.map((r, n) => [r.orderId, starts[n]!.begun]));
      return requests.map((r) => byOrder.get(r.orderId) ?? null);
    });
  };
}

/** The worker's atomic steps: count an attempt, apply a priced reservation, settle. */
export function postgresProcessing(pool: pg.Pool): ProcessingStore {
  const beginAttemptMany = beginAttempts(pool);
  return {
    async beginAttempt(orderId, lease, price) {
      return (await beginAttemptMany([{ orderId, lease, price }]))[0]!;
    },
    beginAttemptMany,
    async reserve(reservation) {
      const { text, values } = reservationCall(reservation, null);
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
