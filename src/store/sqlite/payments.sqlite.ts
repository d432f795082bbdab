import type { PaymentRecord, PaymentStore, SettleToResult } from '../port/store.port.js';
import { groupCalls } from '../../group-calls.js';
import { isStoreUnavailable } from '../store-errors.js';
import type { Db } from './sqlite.db.js';

type AuthorizeRequest = Parameters<PaymentStore['authorizeOnce']>[0];

/** Most authorisations in one transaction; more wait for the next (group-commit.ts's bound). */
const MAX_GROUP = 64;

interface PaymentRow {
  status: 'authorized' | 'declined';
  amount_cents: number;
  ledger_version: number;
}

const toRecord = (row: PaymentRow): PaymentRecord => ({ status: row.status, amountCents: row.amount_cents });

/** The sandbox processor's authorisations, each keyed for idempotency, brought to versioned targets. */
export function sqlitePayments(db: Db): PaymentStore {
  const insert = db.prepare(
    `INSERT INTO payments (idempotency_key, card_id, currency, amount_cents, status, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING`,
  );
  const byKey = db.prepare<[string], PaymentRow>(
    'SELECT status, amount_cents, ledger_version FROM payments WHERE idempotency_key = ?',
  );
  // A release before any authorisation is kept as a declined payment of 0: a later authorisation is declined.
  const release = db.prepare(
    `INSERT INTO payments (idempotency_key, card_id, currency, amount_cents, status, created_at, updated_at,
                           ledger_version)
     VALUES (@key, @cardId, @currency, 0, 'declined', @now, @now, @version)
     ON CONFLICT (idempotency_key) DO UPDATE
        SET amount_cents = CASE WHEN status = 'authorized' THEN 0 ELSE amount_cents END,
            ledger_version = excluded.ledger_version, updated_at = excluded.updated_at
      WHERE ledger_version < excluded.ledger_version`,
  );
  const setAmount = db.prepare(
    `UPDATE payments SET amount_cents = @amountCents, ledger_version = @version, updated_at = @now
      WHERE idempotency_key = @key AND status = 'authorized' AND ledger_version < @version`,
  );

  const authorizeRow = ({ key, cardId, currency, amountCents, approved, now }: AuthorizeRequest) => {
    insert.run(key, cardId, currency, amountCents, approved ? 'authorized' : 'declined', now, now);
    return toRecord(byKey.get(key)!);
  };
  const authorizeMany = db.transaction((requests: readonly AuthorizeRequest[]) => requests.map(authorizeRow));
  // The sandbox's authorisation is not flushed on its own (an order's durable commits are its
  // acceptance, reservation and settlement; flushed-store.ts leaves it out): the settlement that records it in the
  // ledger is, and its flush of the log flushes every commit before it, this one too. A crash before that loses the authorisation with the
  // settlement that would have used it; the job's next attempt authorises again under the same key, as a
  // processor that never heard of it would. So nothing the ledger holds can point at a lost authorisation.
  // A worker's jobs whose attempts came back together authorise together: one commit (one flush of the log)
  // for the turn's authorisations instead of one each, the write lock taken once. Each is the same guarded
  // insert as alone, so two of one key in a group behave as one after the other; a group that fails kept
  // nothing (one transaction) and each runs again alone (group-calls.ts).
  const authorize = groupCalls(
    (requests: readonly AuthorizeRequest[]) => Promise.resolve(authorizeMany.immediate(requests)),
    MAX_GROUP,
    { failsEveryone: isStoreUnavailable },
  );
  const settleTo = db.transaction((request: Parameters<PaymentStore['settleTo']>[0]): SettleToResult => {
    const { key, cardId, currency, amountCents, version, now } = request;
    if (amountCents === 0) {
      return release.run({ key, cardId, currency, version, now }).changes === 1 ? 'applied' : 'superseded';
    }
    if (setAmount.run({ key, amountCents, version, now }).changes === 1) return 'applied';
    const payment = byKey.get(key);
    return payment?.status === 'authorized' ? 'superseded' : 'not-authorised';
  });

  return {
    authorizeOnce: authorize,
    async settleTo(request) {
      return settleTo.immediate(request);
    },
    async find(key) {
      const row = byKey.get(key);
      return row ? toRecord(row) : null;
    },
  };
}
