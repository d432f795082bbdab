/**
 * The webhook and delivery rows as both adapters' SQL names their columns, their mapping to the port's objects,
 * and the webhook secret: an HMAC of a random per-webhook salt under the store's token-hashing key (sealed under
 * SECRETS_KEY), so the database holds nothing that signs, and a rotation of SECRETS_KEY leaves secrets as they are.
 */
import crypto from 'node:crypto';
import { holdsItems, parseSnapshot, readSnapshot, type StoredSnapshot } from './event-snapshot.js';
import type { StoreSecrets } from '../secrets/store-secrets.js';
import type {
  DeliveryState,
  DeliveryTarget,
  ItemView,
  OrderEventType,
  Webhook,
  WebhookWithSecret,
} from '../port/store.port.js';

export type SecretDeriver = Pick<StoreSecrets, 'hashToken'>;

/** A fresh salt for a new webhook. */
export const newSecretSalt = (): string => crypto.randomBytes(16).toString('hex');

// The prefix keeps these inputs apart from card tokens (`cc_…`), the other input of the same key.
const webhookSecret = (secrets: SecretDeriver, salt: string): string =>
  `whsec_${secrets.hashToken(`webhook-secret:${salt}`)}`;

/** A webhook row; `active` and `failing` are 0/1 in SQLite and booleans in PostgreSQL. */
export interface WebhookRow {
  webhook_id: number;
  client_id: number;
  url: string;
  secret_salt: string;
  active: number | boolean;
  failing: number | boolean;
  /** The salt of the secret before the last roll, used to sign until previous_expires_at; null when never rolled. */
  previous_secret_salt: string | null;
  previous_expires_at: number | string | null;
  /** 1 until the first roll; the one before it (version - 1) is previous_secret_salt's. */
  secret_version: number;
}

export const WEBHOOK_COLUMNS =
  'webhook_id, client_id, url, secret_salt, active, failing, previous_secret_salt, previous_expires_at, secret_version';

export const toWebhook = (r: WebhookRow): Webhook => ({
  webhookId: r.webhook_id,
  clientId: r.client_id,
  url: r.url,
  active: Boolean(r.active),
  failing: Boolean(r.failing),
});

export const toWebhookWithSecret = (r: WebhookRow, secrets: SecretDeriver): WebhookWithSecret => ({
  ...toWebhook(r),
  secret: webhookSecret(secrets, r.secret_salt),
  secretVersion: r.secret_version,
});

/** When the secret before the last roll stops signing (ms), or null when there is none. */
export const previousExpiryOf = (r: WebhookRow): number | null =>
  r.previous_secret_salt === null || r.previous_expires_at === null ? null : Number(r.previous_expires_at);

/**
 * The secret a delivery made at `now` is signed with: the one before the last roll until it expires, so a
 * receiver that has not taken the new one yet still verifies every delivery, then the new one.
 */
function signingSecretOf(
  r: WebhookRow,
  secrets: SecretDeriver,
  now: number,
): { secret: string; secretVersion: number } {
  const expiry = previousExpiryOf(r);
  return expiry !== null && now < expiry
    ? { secret: webhookSecret(secrets, r.previous_secret_salt!), secretVersion: r.secret_version - 1 }
    : { secret: webhookSecret(secrets, r.secret_salt), secretVersion: r.secret_version };
}

/** A delivery with its webhook and its event, as TARGET_SQL of either adapter reads it. */
export type TargetRow = WebhookRow & {
  delivery_id: number;
  state: DeliveryState;
  attempts: number;
  event_id: string;
  event_type: OrderEventType;
  order_id: number;
  sequence: number;
  event_created_at: number;
  snapshot: string | StoredSnapshot;
  trace_context: string | null;
  /** The event's items when the adapter reads them in the same statement (PostgreSQL), else absent. */
  items?: ItemView[] | null;
};

/** A delivery with its webhook and its event; `more` adds columns (`, expression AS name`). */
export const targetSelect = (more = ''): string => `
  SELECT d.delivery_id, d.state, d.attempts, w.webhook_id, w.client_id, w.url, w.secret_salt, w.active,
         w.failing, w.previous_secret_salt, w.previous_expires_at, w.secret_version, e.event_id, e.type AS event_type, e.order_id, e.sequence, e.created_at AS event_created_at, e.snapshot,
         e.trace_context${more}
    FROM webhook_deliveries d
    JOIN webhooks w ON w.webhook_id = d.webhook_id
    JOIN order_events e ON e.event_no = d.event_no`;

export const TARGET_SELECT = targetSelect();

/**
 * The row with its snapshot parsed once, and whether the adapter must read the event's items (EVENT_ITEMS_SQL,
 * order_id and sequence) for toTarget: only a row written before item states holds them.
 */
export function parsedTarget(r: TargetRow): { row: TargetRow; needsItems: boolean } {
  const snapshot = parseSnapshot(r.snapshot);
  return { row: { ...r, snapshot }, needsItems: !holdsItems(snapshot) };
}

/**
 * The delivery target of a row, its webhook's secret the one that signs at `now`; `eventItems` the event's items
 * when targetNeedsItems, else null.
 */
export function toTarget(
  r: TargetRow,
  secrets: SecretDeriver,
  eventItems: readonly ItemView[] | null,
  now: number,
): DeliveryTarget {
  const { order, items } = readSnapshot(parseSnapshot(r.snapshot), eventItems);
  return {
    deliveryId: r.delivery_id,
    state: r.state,
    attempts: r.attempts,
    webhook: { ...toWebhook(r), ...signingSecretOf(r, secrets, now) },
    event: {
      eventId: r.event_id,
      type: r.event_type,
      orderId: r.order_id,
      clientId: r.client_id,
      sequence: r.sequence,
      createdAt: r.event_created_at,
      order,
      items,
      ...(r.trace_context ? { traceContext: r.trace_context } : {}),
    },
  };
}
