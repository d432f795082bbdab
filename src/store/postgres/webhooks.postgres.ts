import type pg from 'pg';
import type { ClaimOutcome, DeliveryAttempt, OrderEventWrite, WebhookStore } from '../port/store.port.js';
import {
  newSecretSalt,
  targetSelect,
  toTarget,
  toWebhook,
  toWebhookWithSecret,
  WEBHOOK_COLUMNS,
  type SecretDeriver,
  type TargetRow,
  type WebhookRow,
} from '../shared/webhook.rows.js';
import { eventItemsJsonSql, itemsWithLatest, recordItemStatesSql } from '../shared/event-snapshot.js';
import { FIXED_RESULT, withTransaction, type Queryable } from './postgres.pool.js';
import { canBeId } from './postgres.rows.js';

// event-snapshot.ts's StoredSnapshot, built where the rows are: the order's fields as they stand in this
// transaction, the states of its items that changed since its previous event (the CTE sees the states as they
// were before this statement), and one pending delivery per active webhook of its client.
export const EVENT_SQL = `
  WITH states AS (${recordItemStatesSql(
    'IS NOT DISTINCT FROM',
    '(SELECT event_seq FROM orders WHERE order_id = $1)',
    '$1',
    itemsWithLatest.postgres('$1'),
  )}),
  event AS (
    INSERT INTO order_events (event_id, type, client_id, order_id, sequence, created_at, trace_context, snapshot)
    SELECT $2, $4, o.client_id, o.order_id, o.event_seq, $3, $5::text, jsonb_build_object(
             'order', jsonb_build_object('orderId', o.order_id, 'createdAt', o.created_at,
               'currency', o.currency, 'taxCents', o.tax_cents, 'taxModel', o.tax_model,
               'referenceId', o.reference_id))
      FROM orders o WHERE o.order_id = $1
    RETURNING event_no, client_id)
  INSERT INTO webhook_deliveries (event_no, webhook_id, next_attempt_at, created_at)
  SELECT e.event_no, w.webhook_id, 0, $3 FROM event e JOIN webhooks w ON w.client_id = e.client_id AND w.active`;

/**
 * Records an order event inside the caller's transaction. The sequence is counted first, in a statement of
 * its own: it waits for the order's row lock, so the snapshot, read by the next statement, includes every
 * change committed before, and two changes of one order never number their snapshots out of order. `counted`:
 * a statement of the caller's before this one has counted it (in its own UPDATE of the order).
 */
export async function recordEvent(
  tx: Queryable,
  orderId: number,
  event: OrderEventWrite,
  now: number,
  { counted = false }: { counted?: boolean } = {},
): Promise<void> {
  if (!counted) await tx.query('UPDATE orders SET event_seq = event_seq + 1 WHERE order_id = $1', [orderId]);
  await tx.query(EVENT_SQL, [orderId, event.eventId, now, event.type, event.traceContext ?? null]);
}

// A delivery's target with its event's items in the same statement: rebuilt from the item states unless the
// event's row, written before item states (schema version 18), holds them itself.
export const DELIVERY_TARGET_SQL = targetSelect(`,
  CASE WHEN e.snapshot -> 'items' IS NULL THEN ${eventItemsJsonSql('e.order_id', 'e.sequence')} END AS items`);

const ATTEMPT_COLUMNS =
  'delivery_id AS "deliveryId", webhook_id AS "webhookId", attempts + 1 AS attempt, next_attempt_at AS "dueAt"';

// The delivery finished at its attempt, and its webhook's failing mark set ($1 'failed') or cleared.
const FINISH_SQL = `
  WITH finished AS (
    UPDATE webhook_deliveries SET state = $1, attempts = $2, finished_at = $3, last_error = $4,
           claimed_until = NULL
     WHERE delivery_id = $5 AND attempts = $2 - 1 AND state = 'pending'
    RETURNING webhook_id),
  marked AS (
    UPDATE webhooks w SET failing = ($1 = 'failed') FROM finished f
     WHERE w.webhook_id = f.webhook_id AND w.failing <> ($1 = 'failed'))
  SELECT count(*)::int AS n FROM finished`;

// The webhook's row is read FOR SHARE: a remove not committed yet is waited for and then seen, so no attempt is
// claimed after the remove of its webhook committed. A delivery the remove did not see (recorded by a
// transaction that began before it and committed after) is dropped here. The target is read in the statement's
// snapshot: the delivery as it was before the claim, its webhook and its event. Prepared (FIXED_RESULT): its
// target's columns are named in targetSelect.
const CLAIM_SQL = `${FIXED_RESULT}
  WITH hook AS (
    SELECT w.webhook_id, w.active FROM webhooks w
     WHERE w.webhook_id = (SELECT webhook_id FROM webhook_deliveries WHERE delivery_id = $1)
       FOR SHARE),
  claimed AS (
    UPDATE webhook_deliveries d SET claimed_until = $4 FROM hook h
     WHERE d.delivery_id = $1 AND d.webhook_id = h.webhook_id AND h.active AND d.state = 'pending'
       AND d.attempts = $2 - 1 AND (d.claimed_until IS NULL OR d.claimed_until <= $3)
    RETURNING d.delivery_id),
  dropped AS (
    UPDATE webhook_deliveries d SET state = 'dropped', finished_at = $3 FROM hook h
     WHERE d.delivery_id = $1 AND d.webhook_id = h.webhook_id AND NOT h.active AND d.state = 'pending'
    RETURNING d.delivery_id)
  SELECT (SELECT count(*) FROM dropped)::int AS dropped, t.*
    FROM (SELECT 1) AS one
    LEFT JOIN (${DELIVERY_TARGET_SQL} WHERE d.delivery_id IN (SELECT delivery_id FROM claimed)) t ON true`;

/** Ends the claim of an attempt whose outcome was not recorded (the delivery had moved on, or was dropped). */
const RELEASE_SQL = `UPDATE webhook_deliveries SET claimed_until = NULL
                      WHERE delivery_id = $1 AND attempts = $2 - 1 AND claimed_until IS NOT NULL`;

/** Webhooks and the delivery outbox; each write one statement or one transaction. */
export function postgresWebhooks(pool: pg.Pool, secrets: SecretDeriver): WebhookStore {
  const deliveryTarget = (r: TargetRow, now: number) => toTarget(r, secrets, r.items ?? null, now);
  const webhook = async (sql: string, params: unknown[]) => {
    const row = (await pool.query<WebhookRow>(sql, params)).rows[0];
    return row ? toWebhook(row) : null;
  };
  return {
    async add({ clientId, url, now }) {
      const { rows } = await pool.query<WebhookRow>(
        `INSERT INTO webhooks (client_id, url, secret_salt, created_at) VALUES ($1, $2, $3, $4)
         RETURNING ${WEBHOOK_COLUMNS}`,
        [clientId, url, newSecretSalt(), now],
      );
      return toWebhookWithSecret(rows[0]!, secrets);
    },
    async rollSecret(webhookId, previousExpiresAt) {
      if (!canBeId(webhookId)) return null;
      const { rows } = await pool.query<WebhookRow>(
        `UPDATE webhooks SET previous_secret_salt = secret_salt, previous_expires_at = $1, secret_salt = $2,
                             secret_version = secret_version + 1
          WHERE webhook_id = $3 RETURNING ${WEBHOOK_COLUMNS}`,
        [previousExpiresAt, newSecretSalt(), webhookId],
      );
      return rows[0] ? { ...toWebhookWithSecret(rows[0], secrets), previousExpiresAt } : null;
    },
    async list(clientId) {
      if (!canBeId(clientId)) return [];
      const sql = `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE client_id = $1 ORDER BY webhook_id`;
      return (await pool.query<WebhookRow>(sql, [clientId])).rows.map(toWebhook);
    },
    async find(webhookId) {
      if (!canBeId(webhookId)) return null;
      return webhook(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE webhook_id = $1`, [webhookId]);
    },
    async remove(webhookId, now) {
      if (!canBeId(webhookId)) return null;
      return withTransaction(pool, async (tx) => {
        const { rows } = await tx.query<WebhookRow>(
          `UPDATE webhooks SET active = false WHERE webhook_id = $1 RETURNING ${WEBHOOK_COLUMNS}`,
          [webhookId],
        );
        await tx.query(
          `UPDATE webhook_deliveries SET state = 'dropped', finished_at = $1
            WHERE webhook_id = $2 AND state = 'pending'`,
          [now, webhookId],
        );
        return rows[0] ? toWebhook(rows[0]) : null;
      });
    },
    async claimedAttempts(webhookId, now) {
      if (!canBeId(webhookId)) return 0;
      const { rows } = await pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = $1 AND claimed_until > $2',
        [webhookId, now],
      );
      return rows[0]!.n;
    },
    async replay(webhookId, since, now) {
      if (!canBeId(webhookId)) return 0;
      const { rowCount } = await pool.query(
        `INSERT INTO webhook_deliveries (event_no, webhook_id, next_attempt_at, created_at)
         SELECT e.event_no, w.webhook_id, 0, $1 FROM webhooks w JOIN order_events e ON e.client_id = w.client_id
          WHERE w.webhook_id = $2 AND w.active AND e.created_at >= $3 ORDER BY e.event_no`,
        [now, webhookId, since],
      );
      return rowCount ?? 0;
    },
    async unenqueued(limit) {
      const sql = `SELECT ${ATTEMPT_COLUMNS} FROM webhook_deliveries
                    WHERE state = 'pending' AND enqueued_at IS NULL ORDER BY delivery_id LIMIT $1`;
      return (await pool.query<DeliveryAttempt>(sql, [limit])).rows;
    },
    async overdue(before, limit) {
      const sql = `SELECT ${ATTEMPT_COLUMNS} FROM webhook_deliveries
                    WHERE state = 'pending' AND next_attempt_at < $1 AND enqueued_at < $1
                    ORDER BY next_attempt_at LIMIT $2`;
      return (await pool.query<DeliveryAttempt>(sql, [before, limit])).rows;
    },
    async markEnqueued(attempts, now) {
      if (attempts.length === 0) return;
      await pool.query(
        `UPDATE webhook_deliveries d SET enqueued_at = $1
           FROM unnest($2::bigint[], $3::int[]) AS a(delivery_id, attempts)
          WHERE d.delivery_id = a.delivery_id AND d.attempts = a.attempts AND d.state = 'pending'`,
        [now, attempts.map((a) => a.deliveryId), attempts.map((a) => a.attempt - 1)],
      );
    },
    async target(deliveryId) {
      if (!canBeId(deliveryId)) return null;
      const { rows } = await pool.query<TargetRow>(`${DELIVERY_TARGET_SQL} WHERE d.delivery_id = $1`, [
        deliveryId,
      ]);
      return rows[0] ? deliveryTarget(rows[0], Date.now()) : null;
    },
    async claim(deliveryId, attempt, now, until): Promise<ClaimOutcome> {
      if (!canBeId(deliveryId)) return { kind: 'stale' };
      const { rows } = await pool.query<TargetRow & { dropped: number }>(CLAIM_SQL, [
        deliveryId,
        attempt,
        now,
        until,
      ]);
      const row = rows[0]!;
      if (row.dropped > 0) return { kind: 'dropped' };
      // No delivery claimed: the LEFT JOIN gave nulls.
      const claimed = (row.delivery_id as number | null) !== null;
      return claimed ? { kind: 'claimed', target: deliveryTarget(row, now) } : { kind: 'stale' };
    },
    async recordAttempt(deliveryId, attempt, outcome, now) {
      let recorded: boolean;
      if (outcome.kind === 'retry') {
        const { rowCount } = await pool.query(
          `UPDATE webhook_deliveries SET attempts = $1, next_attempt_at = $2, enqueued_at = NULL, last_error = $3,
                  claimed_until = NULL
            WHERE delivery_id = $4 AND attempts = $1 - 1 AND state = 'pending'`,
          [attempt, outcome.retryAt, outcome.error, deliveryId],
        );
        recorded = rowCount === 1;
      } else {
        const state = outcome.kind === 'delivered' ? 'delivered' : 'failed';
        const error = outcome.kind === 'delivered' ? null : outcome.error;
        const { rows } = await pool.query<{ n: number }>(FINISH_SQL, [
          state,
          attempt,
          now,
          error,
          deliveryId,
        ]);
        recorded = rows[0]?.n === 1;
      }
      if (!recorded) await pool.query(RELEASE_SQL, [deliveryId, attempt]);
      return recorded;
    },
  };
}
