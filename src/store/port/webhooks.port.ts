/** Part of the store port (../store.port.ts): order events, webhooks and the delivery outbox. */
import type { ItemView, OrderView } from './orders.port.js';

/**
 * An event to record in the transaction of the change it reports: the adapter counts one more in the order's
 * sequence, keeps the order as it stands after the change, and adds a pending delivery for every active
 * webhook of the order's client.
 */
export interface OrderEventWrite {
  /** `evt_…`, chosen by the service. */
  eventId: string;
  type: OrderEventType;
  /** The trace of the change (W3C trace context, tracing on), which its deliveries continue. */
  traceContext?: string | undefined;
}

/** The types of event a webhook receives; each has its producer and body in services/order-events.ts. */
export const ORDER_EVENT_TYPES = ['order.updated'] as const;
export type OrderEventType = (typeof ORDER_EVENT_TYPES)[number];

/** A recorded event: the order as GET showed it right after the change. */
export interface OrderEvent {
  eventId: string;
  type: OrderEventType;
  orderId: number;
  clientId: number;
  /** 1 for the order's first event, one more for each later one. */
  sequence: number;
  createdAt: number;
  order: OrderView;
  /** Every item of the order, sorted by orderItemId. */
  items: ItemView[];
  /** The trace of the change that recorded it, when it was traced. */
  traceContext?: string | undefined;
}

export interface Webhook {
  webhookId: number;
  clientId: number;
  url: string;
  active: boolean;
  /** A delivery was given up on after its last attempt; the next delivery that succeeds clears it. */
  failing: boolean;
}

/** A webhook with the key of its signatures, in clear. */
export interface WebhookWithSecret extends Webhook {
  secret: string;
  /** Which of the webhook's secrets it is: 1 until the first roll, one more at each (logs name it, never the secret). */
  secretVersion: number;
}

/** The next attempt of a pending delivery, as the relay hands it to the queue. */
export interface DeliveryAttempt {
  deliveryId: number;
  /** The webhook it goes to: its endpoint's share of the workers is counted by it. */
  webhookId: number;
  /** 1 for the first attempt. */
  attempt: number;
  /** Not to be made before. */
  dueAt: number;
}

/** dropped: its webhook was removed before it was delivered. */
export type DeliveryState = 'pending' | 'delivered' | 'failed' | 'dropped';

/** What one attempt needs: the delivery as it stands, its webhook with its secret, and its event. */
export interface DeliveryTarget {
  deliveryId: number;
  state: DeliveryState;
  /** Attempts made so far. */
  attempts: number;
  webhook: WebhookWithSecret;
  event: OrderEvent;
}

/**
 * How a claim of an attempt ended. claimed: the attempt is the caller's to make; its request may start until the
 * claim's end. dropped: the webhook is removed or inactive, so the delivery is now dropped and nothing is to be
 * sent. stale: the delivery is no longer at that attempt, or another claim of it is still running.
 */
export type ClaimOutcome =
  { kind: 'claimed'; target: DeliveryTarget } | { kind: 'dropped' } | { kind: 'stale' };

/** How an attempt ended: delivered, to be made again at `retryAt`, or the last one (the webhook is failing). */
export type AttemptOutcome =
  | { kind: 'delivered' }
  | { kind: 'retry'; retryAt: number; error: string }
  | { kind: 'gave-up'; error: string };

/**
 * Webhooks and the delivery outbox. Every delivery is a row, so an event recorded is delivered at least once
 * whatever happens to the queue: the relay hands the rows to the queue and hands them again when lost.
 */
export interface WebhookStore {
  /** Registers a webhook; the store keeps no secret in clear and gives it back with the webhook. */
  add(webhook: { clientId: number; url: string; now: number }): Promise<WebhookWithSecret>;
  /**
   * Gives the webhook a new secret (returned in clear); deliveries are still signed with the one it replaces
   * until `previousExpiresAt`, then with the new one. Null when there is no such webhook.
   */
  rollSecret(
    webhookId: number,
    previousExpiresAt: number,
  ): Promise<(WebhookWithSecret & { previousExpiresAt: number }) | null>;
  /** The client's webhooks, removed ones included, by id. */
  list(clientId: number): Promise<Webhook[]>;
  find(webhookId: number): Promise<Webhook | null>;
  /**
   * Deactivates the webhook and drops its pending deliveries; null when there is no such webhook. Attempts
   * claimed before may still start until their claim ends: see claimedAttempts.
   */
  remove(webhookId: number, now: number): Promise<Webhook | null>;
  /** How many attempts to the webhook are claimed and may still start their request at `now`. */
  claimedAttempts(webhookId: number, now: number): Promise<number>;
  /** A new pending delivery to the webhook of every event of its client recorded at or after `since`. */
  replay(webhookId: number, since: number, now: number): Promise<number>;
  /** Pending deliveries whose next attempt is not in the queue yet, oldest first. */
  unenqueued(limit: number): Promise<DeliveryAttempt[]>;
  /** Pending deliveries handed to the queue and due before `before`: their job may have been lost. */
  overdue(before: number, limit: number): Promise<DeliveryAttempt[]>;
  /** Notes that these attempts are in the queue, for the deliveries still waiting for them. */
  markEnqueued(attempts: readonly DeliveryAttempt[], now: number): Promise<void>;
  target(deliveryId: number): Promise<DeliveryTarget | null>;
  /**
   * Claims attempt `attempt` of a delivery, its request to start before `until`, checking its webhook in the same
   * transaction: a delivery of a removed or inactive webhook is dropped instead, and a remove that commits first
   * is seen (a claim never succeeds after the remove of its webhook has committed).
   */
  claim(deliveryId: number, attempt: number, now: number, until: number): Promise<ClaimOutcome>;
  /**
   * Records attempt `attempt` of a pending delivery, and ends its claim whatever the delivery became; false when
   * the delivery is no longer at that attempt.
   */
  recordAttempt(deliveryId: number, attempt: number, outcome: AttemptOutcome, now: number): Promise<boolean>;
  /**
   * Calls `onRecorded` soon after a transaction that recorded pending deliveries commits, in this or any process,
   * until closed (and once whenever the signal was lost and is back, for what came meanwhile). Absent where the
   * store has no such signal (SQLite, or PostgreSQL with only a transaction pooler): the relay then polls.
   */
  watchOutbox?(onRecorded: () => void): OutboxWatch;
}

export interface OutboxWatch {
  close(): Promise<void>;
}
