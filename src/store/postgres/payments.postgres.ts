import type pg from 'pg';
import type { PaymentRecord, PaymentStore } from '../port/store.port.js';
import { groupedCalls } from './postgres.pool.js';

// A release before any authorisation is kept as a declined payment of 0: a later authorisation is declined.
const RELEASE_SQL = `
  INSERT INTO payments (idempotency_key, card_id, currency, amount_cents, status, created_at, updated_at,
                        ledger_version)
  VALUES ($1, $2, $3, 0, 'declined', $4, $4, $5)
  ON CONFLICT (idempotency_key) DO UPDATE
     SET amount_cents = CASE WHEN payments.status = 'authorized' THEN 0 ELSE payments.amount_cents END,
         ledger_version = excluded.ledger_version, updated_at = excluded.updated_at
   WHERE payments.ledger_version < excluded.ledger_version`;

/**
 * The sandbox's authorisation commits without waiting for its flush (synchronous_commit off for its own
 * transaction: an order's durable commits are its acceptance, reservation and settlement): the
 * settlement that records it in the ledger waits for its own flush, and the log is flushed in order, this
 * commit with it. A crash before that loses the authorisation with the settlement that would have used it; the
 * job's next attempt authorises again under the same key, as a processor that never heard of it would.
 */
const AUTHORIZE_SQL = `
  INSERT INTO payments (idempotency_key, card_id, currency, amount_cents, status, created_at, updated_at)
  SELECT $1::text, $2::bigint, $3::text, $4::bigint, $5::text, $6::bigint, $6::bigint
    FROM (SELECT set_config('synchronous_commit', 'off', true)) AS unflushed
  ON CONFLICT (idempotency_key) DO NOTHING
  RETURNING status, amount_cents`;

const SET_AMOUNT_SQL = `
  UPDATE payments SET amount_cents = $2, ledger_version = $3, updated_at = $4
   WHERE idempotency_key = $1 AND status = 'authorized' AND ledger_version < $3`;

interface PaymentRow {
  status: PaymentRecord['status'];
  amount_cents: number;
}

const toRecord = (r: PaymentRow): PaymentRecord => ({ status: r.status, amountCents: r.amount_cents });

/** The sandbox payment processor's own records: authorisations by idempotency key, brought to versioned targets. */
export function postgresPayments(pool: pg.Pool): PaymentStore {
  const find = async (key: string): Promise<PaymentRecord | null> => {
    const { rows } = await pool.query<PaymentRow>(
      'SELECT status, amount_cents FROM payments WHERE idempotency_key = $1',
      [key],
    );
    return rows[0] ? toRecord(rows[0]) : null;
  };

  // Authorisations asked for while others are on their way go together: one commit for the group.
  const insert = groupedCalls(pool, (rows) => (rows[0] ? toRecord(rows[0] as PaymentRow) : null));

  return {
    async authorizeOnce({ key, cardId, currency, amountCents, approved, now }) {
      // The first outcome is returned by the insert that wrote it; a later call reads it in a new statement.
      const inserted = await insert({
        text: AUTHORIZE_SQL,
        values: [key, cardId, currency, amountCents, approved ? 'authorized' : 'declined', now],
      });
      const stored = inserted ?? (await find(key));
      if (!stored) throw new Error(`payment ${key} was recorded but cannot be found`);
      return stored;
    },
    async settleTo({ key, cardId, currency, amountCents, version, now }) {
      if (amountCents === 0) {
        const released = await pool.query(RELEASE_SQL, [key, cardId, currency, now, version]);
        return released.rowCount === 1 ? 'applied' : 'superseded';
      }
      const set = await pool.query(SET_AMOUNT_SQL, [key, amountCents, version, now]);
      if (set.rowCount === 1) return 'applied';
      return (await find(key))?.status === 'authorized' ? 'superseded' : 'not-authorised';
    },
    find,
  };
}
