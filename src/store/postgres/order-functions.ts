import crypto from 'node:crypto';
import type pg from 'pg';
import { PRICING_SQL } from './catalog.postgres.js';
import { INSERT_SQL as LEDGER_SQL } from './ledger.postgres.js';
import { itemsJsonOf } from './orders.postgres.js';
import { EVENT_SQL } from './webhooks.postgres.js';
import { SETS_ITEMS_UPDATED } from './items.postgres.js';

/**
 * The worker's steps on PostgreSQL as functions of the database (PL/pgSQL), each called in one round trip:
 * a step of several statements that depend on each other (a phase guard, then what it allows, then
 * an event whose snapshot must see them) would otherwise cost a round trip per statement, with the order's and
 * the listings' row locks held across them. A function runs them one after the other on the server, each with
 * a snapshot of its own as under READ COMMITTED, so every step keeps the semantics it had as separate
 * statements. The statements shared with other writers (the event and its outbox rows, the ledger entry, the
 * pricing read) are this adapter's constants, bound to the function's parameters by name.
 *
 * A function's name carries a hash of its definition, and `installOrderFunctions` creates the ones missing
 * under the migration lock: a process calls the functions of its own code, so processes of an older and a
 * newer version run side by side, and a changed statement is never left behind in an old definition.
 */

/** Replaces a statement's $1…$n with the function's parameter names, in order. */
function bind(sql: string, names: readonly string[]): string {
  return sql.replace(/\$(\d+)/g, (_, n: string) => {
    const name = names[Number(n) - 1];
    if (!name) throw new Error(`no parameter for $${n}`);
    return name;
  });
}

interface OrderFunction {
  name: string;
  create: string;
}

/**
 * Every statement of these functions is shaped for one plan (a key lookup, a join with the few listings of one
 * order), so each runs a generic plan, planned once per session. Left to choose, PostgreSQL planned the two that
 * join the listings with unnest(p_take_ids, p_take_copies) afresh at every call, for ever: a plan for the
 * arrays' actual length always looks cheaper than one for the 10 rows the planner guesses for an array it cannot
 * see. That planning was a tenth of the server's CPU per order.
 */
const PLAN_ONCE = 'SET plan_cache_mode = force_generic_plan';

/**
 * A function that moves items' updated_at keeps its order's items_updated_at itself, in the UPDATE of the order
 * it makes anyway: the setting turns the row trigger of earlier versions off for its statements
 * (items-updated-net.migration.ts), which would otherwise run a function for every item whose time grows.
 */
const KEEPS_ITEMS_UPDATED = `SET ${SETS_ITEMS_UPDATED} = on`;

function orderFunction(
  base: string,
  params: string,
  returns: string,
  body: string,
  settings: readonly string[] = [PLAN_ONCE],
): OrderFunction {
  const definition = `(${params}) RETURNS ${returns} LANGUAGE plpgsql ${settings.join(' ')} AS $fn$\n${body}\n$fn$`;
  const hash = crypto.createHash('sha1').update(definition).digest('hex').slice(0, 12);
  const name = `${base}_${hash}`;
  return { name, create: `CREATE FUNCTION ${name}${definition}` };
}

// The event of a change with its outbox rows, as recordEvent writes it. Its sequence is counted by the step's
// one UPDATE of the order (EVENT_SEQ), which took the order's row lock before anything else: a second UPDATE of
// a row this transaction already changed would run the row's foreign-key checks again (PostgreSQL checks a key
// whenever the old row version is the transaction's own), each a FOR KEY SHARE lock of the client's and the
// card's rows, which every order of a client shares.
const EVENT_STEP = `
    ${bind(EVENT_SQL, ['p_order_id', 'p_event_id', 'p_now', 'p_event_type', 'p_event_trace'])};`;
const EVENT_SEQ = `event_seq = event_seq + CASE WHEN p_event_id IS NULL THEN 0 ELSE 1 END`;

/**
 * A settled order's pending items take its final status. `+i.status`: the status is not an index term, so the
 * items are found by their order (order_items_order). Without statistics (a new database, or one not analysed
 * since it grew) PostgreSQL took order_items_status for `status = 1`, even on an empty table, and each settlement
 * then read every pending item of every order: a cost that grew with the backlog. $1 order id, $2 status, $3
 * now, $4 whether the shipping and tax charges are cleared.
 */
export const SETTLE_ITEMS_SQL = `UPDATE order_items i
     SET status = $2, updated_at = $3, status_changed_at = $3,
         shipcost_cents = CASE WHEN $4 THEN 0 ELSE i.shipcost_cents END,
         tax_cents = CASE WHEN $4 THEN 0 ELSE i.tax_cents END
   WHERE i.order_id = $1 AND +i.status = 1`;

const ITEMS_JSON = itemsJsonOf('p_order_id');

/**
 * Counts an attempt without writing it: locks the order's row (as the UPDATE that counts it will), reads the
 * order with its count and lease as the attempt makes them, its items and, when the attempt is to reserve it,
 * the pricing catalog of its listings, in a statement after the lock: no reservation or settlement comes
 * between. The caller writes the count in the same transaction, with the reservation (RESERVE_ORDER's
 * p_attempts) or alone (COUNT_ATTEMPT_SQL): one UPDATE of the order per attempt, so the order's foreign keys are
 * not checked again (PostgreSQL checks them when a transaction updates a row version of its own, each a FOR KEY
 * SHARE lock of the client's and the card's rows, which every order of a client shares) and one row version
 * fewer is written. A settled order is read as it is, unlocked and uncounted; null when there is no such order.
 */
export const BEGIN_ATTEMPT = orderFunction(
  'bo_begin_attempt',
  'p_order_id bigint, p_lease_until bigint, p_max_attempts int',
  'json',
  `DECLARE
  v_order record;
BEGIN
  SELECT * INTO v_order FROM orders WHERE order_id = p_order_id AND phase <> 'settled' FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    SELECT * INTO v_order FROM orders WHERE order_id = p_order_id;
    IF NOT FOUND THEN RETURN NULL; END IF;
    RETURN json_build_object('counted', false, 'order', row_to_json(v_order), 'items', ${ITEMS_JSON});
  END IF;
  v_order.attempts := v_order.attempts + 1;
  IF v_order.attempts <= p_max_attempts THEN v_order.lease_until := p_lease_until; END IF;
  RETURN json_build_object('counted', true, 'order', row_to_json(v_order), 'items', ${ITEMS_JSON},
    'catalog', CASE WHEN v_order.phase = 'queued' AND v_order.attempts <= p_max_attempts THEN
      coalesce((SELECT json_agg(c) FROM (${bind(PRICING_SQL, [
        '(SELECT array_agg(DISTINCT listing_id) FROM order_items WHERE order_id = p_order_id)',
      ])}) c), '[]') END);
END;`,
);

/** Writes an attempt that BEGIN_ATTEMPT counted and no reservation wrote: $1 order id, $2 its count, $3 its lease. */
export const COUNT_ATTEMPT_SQL = `UPDATE orders SET attempts = $2, lease_until = $3 WHERE order_id = $1`;

/**
 * Applies a priced reservation while the order is still queued: 'not-queued' when it no longer is, 'short' when
 * a listing lacks the stock (nothing of it written), else 'applied'. The listings are locked in id order, as
 * every writer locks them, and checked before anything is written, so the take cannot fall short afterwards.
 * p_attempts and p_lease_until, when not null, are the attempt BEGIN_ATTEMPT counted in this transaction,
 * written whatever the result, in the reservation's UPDATE of the order when it applies.
 */
export const RESERVE_ORDER = orderFunction(
  'bo_reserve_order',
  `p_order_id bigint, p_phase text, p_tax_cents bigint, p_tax_model text, p_total_cents bigint, p_now bigint,
   p_item_ids bigint[], p_costs bigint[], p_shipcosts bigint[], p_taxes bigint[], p_min_days int[],
   p_max_days int[], p_statuses int[], p_take_ids bigint[], p_take_copies int[], p_event_id text,
   p_event_type text, p_event_trace text, p_attempts int, p_lease_until bigint`,
  'text',
  `DECLARE
  v_enough boolean;
  v_found int := 0;
  v_result text := 'applied';
  v_items_at bigint;
BEGIN
  -- The lock an UPDATE of the order takes, which the attempt's transaction holds already: no second lock of the
  -- row (a stronger FOR UPDATE wrote one more record to the log per order).
  PERFORM 1 FROM orders WHERE order_id = p_order_id AND phase = 'queued' FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    v_result := 'not-queued';
  ELSE
    FOR v_enough IN
      SELECT l.stock >= t.copies FROM listings l
        JOIN unnest(p_take_ids, p_take_copies) AS t(listing_id, copies) ON t.listing_id = l.listing_id
       ORDER BY l.listing_id FOR UPDATE OF l
    LOOP
      EXIT WHEN NOT v_enough;
      v_found := v_found + 1;
    END LOOP;
    IF v_found <> cardinality(p_take_ids) THEN v_result := 'short'; END IF;
  END IF;
  IF v_result <> 'applied' THEN
    IF p_attempts IS NOT NULL THEN
      ${bind(COUNT_ATTEMPT_SQL, ['p_order_id', 'p_attempts', 'p_lease_until'])};
    END IF;
    RETURN v_result;
  END IF;
  -- An item rejected now (no longer QUEUED) is a change the event reports, and its time the order's latest.
  WITH priced AS (
    UPDATE order_items i
       SET cost_cents = u.cost_cents, shipcost_cents = u.shipcost_cents, tax_cents = u.tax_cents,
           min_days = u.min_days, max_days = u.max_days,
           status = CASE WHEN i.status = 1 AND u.status <> 1 THEN u.status ELSE i.status END,
           updated_at = CASE WHEN i.status = 1 AND u.status <> 1 THEN p_now ELSE i.updated_at END,
           status_changed_at = CASE WHEN i.status = 1 AND u.status <> 1 THEN p_now ELSE i.status_changed_at END
      FROM unnest(p_item_ids, p_costs, p_shipcosts, p_taxes, p_min_days, p_max_days, p_statuses)
             AS u(order_item_id, cost_cents, shipcost_cents, tax_cents, min_days, max_days, status)
     WHERE i.order_id = p_order_id AND i.order_item_id = u.order_item_id
    RETURNING i.updated_at)
  SELECT max(updated_at) INTO v_items_at FROM priced;
  UPDATE orders SET phase = p_phase, tax_cents = p_tax_cents, tax_model = p_tax_model, total_cents = p_total_cents,
         attempts = coalesce(p_attempts, attempts),
         lease_until = CASE WHEN p_attempts IS NULL THEN lease_until ELSE p_lease_until END, ${EVENT_SEQ},
         items_updated_at = CASE WHEN v_items_at > coalesce(items_updated_at, created_at) THEN v_items_at
                                 ELSE items_updated_at END
   WHERE order_id = p_order_id;
  IF p_event_id IS NOT NULL THEN${EVENT_STEP}
  END IF;
  UPDATE listings l SET stock = l.stock - t.copies
    FROM unnest(p_take_ids, p_take_copies) AS t(listing_id, copies)
   WHERE l.listing_id = t.listing_id;
  RETURN 'applied';
END;`,
  [PLAN_ONCE, KEEPS_ITEMS_UPDATED],
);

/**
 * Settles the order while it is in p_from_phase (and its lease allows): its QUEUED items move, the stock given
 * back (listings locked in id order), the ledger entry and the event with its outbox rows written. False, with
 * nothing written, when the order is no longer in that phase.
 */
export const SETTLE_ORDER = orderFunction(
  'bo_settle_order',
  `p_order_id bigint, p_from_phase text, p_zero_tax boolean, p_item_status int, p_clear_charges boolean,
   p_now bigint, p_lease_free_at bigint, p_release int, p_give_ids bigint[], p_give_copies int[],
   p_entry_key text, p_entry_item bigint, p_entry_kind text, p_entry_amount bigint, p_entry_currency text,
   p_event_id text, p_event_type text, p_event_trace text`,
  'boolean',
  `DECLARE
  v_entry bigint;
BEGIN
  -- Its pending items are updated now, so their time is the order's latest; with none pending it keeps its time.
  -- Items leave QUEUED only under the order's row lock: a settlement that waited for it reads the items as they were
  -- when its statement began, and can only over-state the time, never under-state it.
  UPDATE orders SET phase = 'settled', payment_version = payment_version + p_release,
         tax_cents = CASE WHEN p_zero_tax AND tax_cents IS NOT NULL THEN 0 ELSE tax_cents END, ${EVENT_SEQ},
         items_updated_at = CASE
           WHEN EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = p_order_id AND +i.status = 1)
           THEN greatest(coalesce(items_updated_at, created_at), p_now) ELSE items_updated_at END
   WHERE order_id = p_order_id AND phase = p_from_phase
     AND (p_lease_free_at IS NULL OR lease_until IS NULL OR lease_until <= p_lease_free_at);
  IF NOT FOUND THEN RETURN false; END IF;
  ${bind(SETTLE_ITEMS_SQL, ['p_order_id', 'p_item_status', 'p_now', 'p_clear_charges'])};
  IF cardinality(p_give_ids) > 0 THEN
    PERFORM 1 FROM listings WHERE listing_id = ANY(p_give_ids) ORDER BY listing_id FOR UPDATE;
    UPDATE listings l SET stock = l.stock + t.copies
      FROM unnest(p_give_ids, p_give_copies) AS t(listing_id, copies)
     WHERE l.listing_id = t.listing_id;
  END IF;
  IF p_entry_key IS NOT NULL THEN
    ${bind(LEDGER_SQL, [
      'p_entry_key',
      'p_order_id',
      'p_entry_item',
      'p_entry_kind',
      'p_entry_amount',
      'p_entry_currency',
      'p_now',
    ]).trim()} INTO v_entry;
  END IF;
  IF p_event_id IS NOT NULL THEN${EVENT_STEP}
  END IF;
  RETURN true;
END;`,
  [PLAN_ONCE, KEEPS_ITEMS_UPDATED],
);

export const ORDER_FUNCTIONS: readonly OrderFunction[] = [BEGIN_ATTEMPT, RESERVE_ORDER, SETTLE_ORDER];

/** Creates the functions of this code that the database lacks; run under the migration lock. */
export async function installOrderFunctions(tx: pg.ClientBase): Promise<void> {
  const { rows } = await tx.query<{ proname: string }>(
    'SELECT proname FROM pg_proc WHERE proname = ANY($1::text[])',
    [ORDER_FUNCTIONS.map((f) => f.name)],
  );
  const present = new Set(rows.map((r) => r.proname));
  for (const f of ORDER_FUNCTIONS) if (!present.has(f.name)) await tx.query(f.create);
}
