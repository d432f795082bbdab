import { setTimeout as sleep } from 'node:timers/promises';
import type { Store, Webhook, WebhookWithSecret } from '../store/port/store.port.js';
import {
  hostOf,
  parseWebhookUrl,
  resolveTarget,
  systemResolver,
  WebhookTargetError,
  type Resolver,
} from '../webhooks/webhook-target.js';

export interface WebhookAdminDeps {
  store: Pick<Store, 'webhooks'>;
  /** WEBHOOK_ALLOW_PRIVATE. */
  allowPrivate: boolean;
  resolve?: Resolver;
  clock: () => number;
}

export type AddWebhookOutcome =
  { kind: 'added'; webhook: WebhookWithSecret } | { kind: 'refused'; message: string };

/**
 * Registers a webhook for a client after checking its URL as every delivery will: http(s), and unless private
 * targets are allowed, a host that is and resolves to public addresses only. Deliveries check again, since
 * what a name resolves to may change.
 */
export async function addWebhook(
  deps: WebhookAdminDeps,
  clientId: number,
  urlText: string,
): Promise<AddWebhookOutcome> {
  let url: URL;
  try {
    url = parseWebhookUrl(urlText);
    await resolveTarget(hostOf(url), {
      allowPrivate: deps.allowPrivate,
      resolve: deps.resolve ?? systemResolver,
    });
  } catch (err) {
    if (err instanceof WebhookTargetError) return { kind: 'refused', message: err.message };
    throw err;
  }
  const webhook = await deps.store.webhooks.add({ clientId, url: url.href, now: deps.clock() });
  return { kind: 'added', webhook };
}

const CLAIM_POLL_MS = 50;

/**
 * Removes a webhook: deactivates it and drops its pending deliveries, then waits until no attempt claimed before
 * may still start (at most CLAIM_START_WINDOW_MS), so that nothing is posted to it once this answers. Attempts
 * recorded later for it (an event whose transaction began before the remove) are dropped when claimed.
 */
export async function removeWebhook(
  deps: Pick<WebhookAdminDeps, 'store' | 'clock'>,
  webhookId: number,
): Promise<Webhook | null> {
  const removed = await deps.store.webhooks.remove(webhookId, deps.clock());
  if (!removed) return null;
  while ((await deps.store.webhooks.claimedAttempts(webhookId, deps.clock())) > 0) await sleep(CLAIM_POLL_MS);
  return removed;
}

export type ReplayOutcome = { kind: 'replayed'; count: number } | { kind: 'missing' } | { kind: 'removed' };

/** Every event of the webhook's client recorded since `since`, sent to it again (as new deliveries). */
export async function replayWebhook(
  deps: Pick<WebhookAdminDeps, 'store' | 'clock'>,
  webhookId: number,
  since: number,
): Promise<ReplayOutcome> {
  const webhook = await deps.store.webhooks.find(webhookId);
  if (!webhook) return { kind: 'missing' };
  if (!webhook.active) return { kind: 'removed' };
  return { kind: 'replayed', count: await deps.store.webhooks.replay(webhookId, since, deps.clock()) };
}
