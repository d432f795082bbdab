import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import type { AttemptOutcome, Store } from '../store/store.port.js';
import type { WebhookSender } from '../webhooks/webhook-sender.js';
import { eventBody } from './order-events.js';
import { isoMs } from './order-view.js';

export interface DeliverDeps {
  store: Pick<Store, 'webhooks'>;
  sender: Pick<WebhookSender, 'post'>;
  clock: () => number;
  logger: Logger;
  config: Pick<Config, 'WEBHOOK_RETRY_BASE_MS' | 'WEBHOOK_MAX_ATTEMPTS'>;
}

/**
 * stale: the delivery is no longer at this attempt (done, dropped, or another job is making it); dropped: its
 * webhook is removed or inactive, and the delivery is now dropped. Nothing was sent in either case.
 */
export type DeliveryOutcome = AttemptOutcome['kind'] | 'stale' | 'dropped';

/**
 * How long after its claim an attempt may still start its request (resolving the host comes first). A remove
 * waits at most this long for attempts claimed before it, so nothing starts after the remove has answered.
 */
export const CLAIM_START_WINDOW_MS = 5000;

const HOUR_MS = 3_600_000;

/** The wait after failed attempt n (1-based): the base, doubling with each attempt, at most one hour. */
export function retryDelayMs(failedAttempt: number, baseMs: number): number {
  return Math.min(baseMs * 2 ** Math.min(failedAttempt - 1, 32), HOUR_MS);
}

/**
 * Makes attempt `attempt` of a delivery: posts the signed event and records what happened, guarded by the
 * attempt number, so a job run twice posts at most twice (at least once is the promise) and records once.
 * The attempt is claimed first, with its webhook checked in the same transaction: a delivery of a removed or
 * inactive webhook is dropped, never posted, and the request starts only while the claim lasts.
 * After the last attempt the webhook is marked failing; a later delivery that succeeds clears the mark.
 */
export async function deliverWebhook(
  deps: DeliverDeps,
  deliveryId: number,
  attempt: number,
): Promise<DeliveryOutcome> {
  const claimedAt = deps.clock();
  const until = claimedAt + CLAIM_START_WINDOW_MS;
  // The webhook is checked here, at delivery time, in the transaction that claims the attempt.
  const claim = await deps.store.webhooks.claim(deliveryId, attempt, claimedAt, until);
  if (claim.kind === 'dropped')
    deps.logger.info({ deliveryId, attempt }, 'webhook removed; delivery dropped');
  if (claim.kind !== 'claimed') return claim.kind;
  const { webhook, event } = claim.target;
  const result = await deps.sender.post({
    url: webhook.url,
    secret: webhook.secret,
    eventId: event.eventId,
    date: isoMs(claimedAt),
    body: eventBody(event),
    mayStart: () => deps.clock() < until,
  });
  const now = deps.clock();
  const { WEBHOOK_MAX_ATTEMPTS: max, WEBHOOK_RETRY_BASE_MS: base } = deps.config;
  const outcome: AttemptOutcome = result.ok
    ? { kind: 'delivered' }
    : attempt >= max
      ? { kind: 'gave-up', error: result.error }
      : { kind: 'retry', retryAt: now + retryDelayMs(attempt, base), error: result.error };
  const recorded = await deps.store.webhooks.recordAttempt(deliveryId, attempt, outcome, now);
  const fields = { deliveryId, attempt, webhookId: webhook.webhookId, eventId: event.eventId };
  if (outcome.kind === 'delivered') deps.logger.debug(fields, 'webhook delivered');
  else if (outcome.kind === 'retry')
    deps.logger.info({ ...fields, error: outcome.error }, 'webhook attempt failed');
  else deps.logger.warn({ ...fields, error: outcome.error }, 'webhook delivery given up; webhook failing');
  return recorded ? outcome.kind : 'stale';
}
