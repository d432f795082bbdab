import { snapshotOf } from '../event-snapshot.js';
import type { AttemptOutcome, DeliveryAttempt, OrderEventWrite, WebhookStore } from '../store.port.js';
import {
  newSecretSalt,
  TARGET_SELECT,
  toTarget,
  toWebhook,
  toWebhookWithSecret,
  WEBHOOK_COLUMNS,
  type SecretDeriver,
  type TargetRow,
  type WebhookRow,
} from '../webhook.rows.js';
import { orderReader } from './orders.sqlite.js';
import type { Db } from './sqlite.db.js';

/**
 * Records an order event inside the caller's transaction: the order's sequence counted on, the order as it now
 * stands, and a pending delivery for every active webhook of its client.
 */
export function eventRecorder(db: Db): (orderId: number, event: OrderEventWrite, now: number) => void {
  const read = orderReader(db);
  const bump = db
    .prepare<[number], number>(
      'UPDATE orders SET event_seq = event_seq + 1 WHERE order_id = ? RETURNING event_seq',
    )
    .pluck();
  const insertEvent = db
    .prepare<[string, number, number, number, number, string], number>(
      `INSERT INTO order_events (event_id, client_id, order_id, sequence, created_at, snapshot)
       VALUES (?, ?, ?, ?, ?, ?) RETURNING event_no`,
    )
    .pluck();
  const insertDeliveries = db.prepare<[number, number, number]>(
    `INSERT INTO webhook_deliveries (event_no, webhook_id, next_attempt_at, created_at)
     SELECT ?, webhook_id, 0, ? FROM webhooks WHERE client_id = ? AND active = 1`,
  );
  return (orderId, event, now) => {
    const sequence = bump.get(orderId)!;
    const stored = read(orderId)!;
    const snapshot = JSON.stringify(snapshotOf(stored));
    const clientId = stored.order.clientId;
    const eventNo = insertEvent.get(event.eventId, clientId, orderId, sequence, now, snapshot)!;
    insertDeliveries.run(eventNo, now, clientId);
  };
}

const ATTEMPT_COLUMNS = 'delivery_id AS deliveryId, attempts + 1 AS attempt, next_attempt_at AS dueAt';

/** Webhooks and the delivery outbox; each write one transaction. */
export function sqliteWebhooks(db: Db, secrets: SecretDeriver): WebhookStore {
  const insert = db.prepare<[number, string, string, number], WebhookRow>(
    `INSERT INTO webhooks (client_id, url, secret_salt, created_at) VALUES (?, ?, ?, ?)
     RETURNING ${WEBHOOK_COLUMNS}`,
  );
  const byClient = db.prepare<[number], WebhookRow>(
    `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE client_id = ? ORDER BY webhook_id`,
  );
  const byId = db.prepare<[number], WebhookRow>(
    `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE webhook_id = ?`,
  );
  const deactivate = db.prepare<[number], WebhookRow>(
    `UPDATE webhooks SET active = 0 WHERE webhook_id = ? RETURNING ${WEBHOOK_COLUMNS}`,
  );
  const dropPending = db.prepare<[number, number]>(
    `UPDATE webhook_deliveries SET state = 'dropped', finished_at = ? WHERE webhook_id = ? AND state = 'pending'`,
  );
  const replay = db.prepare<[{ now: number; webhookId: number; since: number }]>(
    `INSERT INTO webhook_deliveries (event_no, webhook_id, next_attempt_at, created_at)
     SELECT e.event_no, w.webhook_id, 0, @now FROM webhooks w JOIN order_events e ON e.client_id = w.client_id
      WHERE w.webhook_id = @webhookId AND w.active = 1 AND e.created_at >= @since ORDER BY e.event_no`,
  );
  const unenqueued = db.prepare<[number], DeliveryAttempt>(
    `SELECT ${ATTEMPT_COLUMNS} FROM webhook_deliveries
      WHERE state = 'pending' AND enqueued_at IS NULL ORDER BY delivery_id LIMIT ?`,
  );
  const overdue = db.prepare<[number, number, number], DeliveryAttempt>(
    `SELECT ${ATTEMPT_COLUMNS} FROM webhook_deliveries
      WHERE state = 'pending' AND next_attempt_at < ? AND enqueued_at < ? ORDER BY next_attempt_at LIMIT ?`,
  );
  const markEnqueued = db.prepare<[number, number, number]>(
    `UPDATE webhook_deliveries SET enqueued_at = ?
      WHERE delivery_id = ? AND attempts = ? AND state = 'pending'`,
  );
  const target = db.prepare<[number], TargetRow>(`${TARGET_SELECT} WHERE d.delivery_id = ?`);
  const record = attemptRecorder(db);

  const remove = db.transaction((webhookId: number, now: number) => {
    const row = deactivate.get(webhookId);
    if (row) dropPending.run(now, webhookId);
    return row;
  });
  const markAll = db.transaction((attempts: readonly DeliveryAttempt[], now: number) => {
    for (const a of attempts) markEnqueued.run(now, a.deliveryId, a.attempt - 1);
  });

  return {
    async add({ clientId, url, now }) {
      return toWebhookWithSecret(insert.get(clientId, url, newSecretSalt(), now)!, secrets);
    },
    async list(clientId) {
      return byClient.all(clientId).map(toWebhook);
    },
    async find(webhookId) {
      const row = byId.get(webhookId);
      return row ? toWebhook(row) : null;
    },
    async remove(webhookId, now) {
      const row = remove.immediate(webhookId, now);
      return row ? toWebhook(row) : null;
    },
    async replay(webhookId, since, now) {
      return replay.run({ now, webhookId, since }).changes;
    },
    async unenqueued(limit) {
      return unenqueued.all(limit);
    },
    async overdue(before, limit) {
      return overdue.all(before, before, limit);
    },
    async markEnqueued(attempts, now) {
      markAll.immediate(attempts, now);
    },
    async target(deliveryId) {
      const row = target.get(deliveryId);
      return row ? toTarget(row, secrets) : null;
    },
    async recordAttempt(deliveryId, attempt, outcome, now) {
      return record.immediate(deliveryId, attempt, outcome, now);
    },
  };
}

/** An attempt's outcome on its delivery (guarded by the attempt number) and on its webhook's failing mark. */
function attemptRecorder(db: Db) {
  const finish = db
    .prepare<[string, number, number, string | null, number, number], number>(
      `UPDATE webhook_deliveries SET state = ?, attempts = ?, finished_at = ?, last_error = ?
        WHERE delivery_id = ? AND attempts = ? AND state = 'pending' RETURNING webhook_id`,
    )
    .pluck();
  const retry = db.prepare<[number, number, string, number, number]>(
    `UPDATE webhook_deliveries SET attempts = ?, next_attempt_at = ?, enqueued_at = NULL, last_error = ?
      WHERE delivery_id = ? AND attempts = ? AND state = 'pending'`,
  );
  const markFailing = db.prepare<[{ failing: number; webhookId: number }]>(
    'UPDATE webhooks SET failing = @failing WHERE webhook_id = @webhookId AND failing <> @failing',
  );
  return db.transaction((deliveryId: number, attempt: number, outcome: AttemptOutcome, now: number) => {
    if (outcome.kind === 'retry') {
      return retry.run(attempt, outcome.retryAt, outcome.error, deliveryId, attempt - 1).changes === 1;
    }
    const delivered = outcome.kind === 'delivered';
    const state = delivered ? 'delivered' : 'failed';
    const error = delivered ? null : outcome.error;
    const webhookId = finish.get(state, attempt, now, error, deliveryId, attempt - 1);
    if (webhookId === undefined) return false;
    markFailing.run({ failing: delivered ? 0 : 1, webhookId });
    return true;
  });
}
