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

/** stale: the delivery is no longer at this attempt (done, dropped, or another job made it): nothing was sent. */
export type DeliveryOutcome = AttemptOutcome['kind'] | 'stale';

const HOUR_MS = 3_600_000;

/** The wait after failed attempt n (1-based): the base, doubling with each attempt, at most one hour. */
export function retryDelayMs(failedAttempt: number, baseMs: number): number {
  return Math.min(baseMs * 2 ** Math.min(failedAttempt - 1, 32), HOUR_MS);
}

/**
 * Makes attempt `attempt` of a delivery: posts the signed event and records what happened, guarded by the
 * attempt number, so a job run twice posts at most twice (at least once is the promise) and records once.
 * After the last attempt the webhook is marked failing; a later delivery that succeeds clears the mark.
 */
export async function deliverWebhook(
  deps: DeliverDeps,
  deliveryId: number,
  attempt: number,
): Promise<DeliveryOutcome> {
  const target = await deps.store.webhooks.target(deliveryId);
  if (!target || target.state !== 'pending' || target.attempts !== attempt - 1) return 'stale';
  const { webhook, event } = target;
  const result = await deps.sender.post({
    url: webhook.url,
    secret: webhook.secret,
    eventId: event.eventId,
    date: isoMs(deps.clock()),
    body: eventBody(event),
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
