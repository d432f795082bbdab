import type { Db } from '../store/db.js';
import type { AuthorizeResult, PaymentGateway } from './payment-gateway.js';

interface PaymentRow {
  status: 'authorized' | 'declined';
  amount_cents: number;
}

/**
 * The sandbox processor behind `card:add` cards: it keeps its authorisations in the `payments` table and
 * declines every authorisation on a card added with `--decline`; `latencyMs` simulates a processor's delay.
 */
export function createSandboxGateway(db: Db, clock: () => number = Date.now, latencyMs = 0): PaymentGateway {
  const declines = db.prepare<[number], { declines: number }>('SELECT declines FROM cards WHERE card_id = ?');
  const insert = db.prepare(
    `INSERT INTO payments (idempotency_key, card_id, currency, amount_cents, status, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING`,
  );
  const byKey = db.prepare<[string], PaymentRow>(
    'SELECT status, amount_cents FROM payments WHERE idempotency_key = ?',
  );
  const insertStep = db.prepare(
    `INSERT INTO payment_adjustments (adjustment_key, payment_key, delta_cents, created_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (adjustment_key) DO NOTHING`,
  );
  const apply = db.prepare(
    `UPDATE payments SET amount_cents = max(0, amount_cents + ?), updated_at = ?
      WHERE idempotency_key = ? AND status = 'authorized'`,
  );

  const authorize = db.transaction((key: string, cardId: number, amountCents: number, currency: string) => {
    const decline = declines.get(cardId)?.declines === 1;
    const now = clock();
    insert.run(key, cardId, currency, amountCents, decline ? 'declined' : 'authorized', now, now);
    return byKey.get(key)!;
  });
  const adjust = db.transaction((key: string, step: string, deltaCents: number | null) => {
    const payment = byKey.get(key);
    if (!payment || payment.status !== 'authorized') return;
    const delta = deltaCents ?? -payment.amount_cents;
    const now = clock();
    if (insertStep.run(`${key}#${step}`, key, delta, now).changes === 1) apply.run(delta, now, key);
  });

  return {
    async authorize({ key, cardId, amountCents, currency }): Promise<AuthorizeResult> {
      // A real processor answers in tens of milliseconds; the sandbox can be told to take as long.
      if (latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, latencyMs));
      const row = authorize.immediate(key, cardId, amountCents, currency);
      return { approved: row.status === 'authorized', amountCents: row.amount_cents };
    },
    adjust(key, step, deltaCents) {
      adjust.immediate(key, step, deltaCents);
      return Promise.resolve();
    },
  };
}
