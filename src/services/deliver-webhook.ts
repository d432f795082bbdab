import type { Config } from '../config/config.js';
import type { Logger } from '../logger.js';
import type { AttemptResult, EndpointGate } from '../redis/endpoint-gate.js';
import type { AttemptOutcome, Store } from '../store/port/store.port.js';
import type { WebhookSender } from '../webhooks/webhook-sender.js';
import type { ClientSlots } from '../webhooks/client-slots.js';
import { inSpan } from '../tracing/tracing.js';
import { eventBody } from './order-events.js';
import { isoMs } from './order-view.js';

export interface DeliverDeps {
  store: Pick<Store, 'webhooks'>;
  sender: Pick<WebhookSender, 'post'>;
  clock: () => number;
  logger: Logger;
  config: Pick<Config, 'WEBHOOK_RETRY_BASE_MS' | 'WEBHOOK_MAX_ATTEMPTS'>;
}

export interface FairDeliverDeps extends DeliverDeps {
  gate: EndpointGate;
  /** This process's delivery slots by client: a client's endpoints together hold at most its share. */
  clientSlots: ClientSlots;
  /** The client of a webhook (see webhookClients); undefined when there is no such webhook. */
  clientOf(webhookId: number): Promise<number | undefined>;
  config: DeliverDeps['config'] & Pick<Config, 'WEBHOOK_TIMEOUT_MS' | 'WEBHOOK_SLOW_MS'>;
  /** [0, 1): spreads the waits of an endpoint's backlog. */
  random?: () => number;
}

/** An attempt that may not start now: its job is to wait `waitMs` in the queue, holding no worker slot. */
export interface Deferral {
  kind: 'deferred';
  /**
   * busy: its endpoint, or its client's share of this worker, has all its slots taken; paused: its endpoint keeps
   * failing (or answering slowly) and rests.
   */
  reason: 'busy' | 'paused';
  waitMs: number;
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
  // The attempt continues the trace of the change that recorded the event (its own job's trace is the relay's).
  const attributes = {
    'order.id': event.orderId,
    'webhook.id': webhook.webhookId,
    'delivery.id': deliveryId,
    attempt,
  };
  return inSpan(
    'webhook.deliver',
    attributes,
    async () => {
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
      const fields = {
        deliveryId,
        attempt,
        webhookId: webhook.webhookId,
        eventId: event.eventId,
        secretVersion: webhook.secretVersion,
      };
      if (outcome.kind === 'delivered') deps.logger.debug(fields, 'webhook delivered');
      else if (outcome.kind === 'retry' && !result.ok && result.refused)
        // The operator's to mend (the URL, or WEBHOOK_ALLOW_PRIVATE on the workers), not the receiver's.
        deps.logger.warn(
          { ...fields, url: webhook.url, error: outcome.error },
          'webhook target refused; nothing sent',
        );
      else if (outcome.kind === 'retry')
        deps.logger.info({ ...fields, error: outcome.error }, 'webhook attempt failed');
      else
        deps.logger.warn({ ...fields, error: outcome.error }, 'webhook delivery given up; webhook failing');
      return recorded ? outcome.kind : 'stale';
    },
    event.traceContext,
  );
}

/** How long an attempt waits in its slot for one of its busy, answering endpoint's to end before it is deferred. */
const SLOT_PATIENCE_MS = 250;
const BUSY_WAIT_MS = [200, 1000] as const;
const PAUSE_SPREAD_MS = 1000;
/** Webhooks whose client is remembered by a worker: past this many, it forgets them all and reads them again. */
const CLIENTS_KEPT = 10_000;

/** Whether an attempt was delivered, and in time, as the breaker hears it ('none': nothing was sent). */
function resultOf(outcome: DeliveryOutcome | undefined, answeredInMs: number, slowMs: number): AttemptResult {
  if (outcome === 'delivered') return answeredInMs > slowMs ? 'slow' : 'ok';
  return outcome === 'retry' || outcome === 'gave-up' ? 'failed' : 'none';
}

/** A webhook's client, read from the store once per webhook and process: a webhook never changes client. */
export function webhookClients(
  store: Pick<Store, 'webhooks'>,
): (webhookId: number) => Promise<number | undefined> {
  const known = new Map<number, number>();
  return async (webhookId) => {
    const cached = known.get(webhookId);
    if (cached !== undefined) return cached;
    const webhook = await store.webhooks.find(webhookId);
    if (!webhook) return undefined;
    if (known.size >= CLIENTS_KEPT) known.clear();
    known.set(webhookId, webhook.clientId);
    return webhook.clientId;
  };
}

/**
 * Makes an attempt as deliverWebhook does, if its client's share of this worker and its endpoint let it: at most
 * WEBHOOK_CONCURRENCY_PER_CLIENT attempts of one client's endpoints at once in this process, at most a few attempts
 * to one endpoint at once across every worker, none while the endpoint is paused after failing (or answering later
 * than WEBHOOK_SLOW_MS) again and again. An attempt that may not start is deferred: when the endpoint or the client
 * is busy and answering, after waiting a moment in its slot for one of the endpoint's to end, for a moment more;
 * about a response time-out when busy and slow (its slots are held by attempts that may hang that long); past the
 * end of the pause when it is paused (spread over as long again as the pause has left, at least a second, so that
 * its backlog does not wake at once).
 */
export async function deliverFairly(
  deps: FairDeliverDeps,
  job: { deliveryId: number; attempt: number; webhookId?: number | undefined },
): Promise<DeliveryOutcome | Deferral> {
  const endpoint = await endpointOf(deps, job);
  if (!endpoint) return 'stale';
  const { webhookId, clientId } = endpoint;
  const random = deps.random ?? Math.random;
  const share = deps.clientSlots.take(clientId);
  if (share.kind === 'full') return busy(deps, share.slow, random);
  try {
    const entry = await deps.gate.enter(webhookId, SLOT_PATIENCE_MS);
    if (entry.kind === 'paused') {
      // Woken over as long again as the pause has left, so that a large backlog does not wake all at once.
      const spread = Math.max(PAUSE_SPREAD_MS, entry.waitMs);
      return { kind: 'deferred', reason: 'paused', waitMs: entry.waitMs + Math.floor(random() * spread) };
    }
    if (entry.kind === 'busy') return busy(deps, entry.slow, random);
    return await attemptInSlot(deps, job, webhookId, entry.token);
  } finally {
    share.release();
  }
}

/** The attempt, in the endpoint's slot `token`: the breaker then hears how it went, and how soon it was answered. */
async function attemptInSlot(
  deps: FairDeliverDeps,
  job: { deliveryId: number; attempt: number },
  webhookId: number,
  token: string,
): Promise<DeliveryOutcome> {
  let outcome: DeliveryOutcome | undefined;
  let answeredInMs = 0;
  const sender = {
    async post(request: Parameters<WebhookSender['post']>[0]) {
      const sentAt = deps.clock();
      try {
        return await deps.sender.post(request);
      } finally {
        answeredInMs = deps.clock() - sentAt;
      }
    },
  };
  try {
    outcome = await deliverWebhook({ ...deps, sender }, job.deliveryId, job.attempt);
    return outcome;
  } finally {
    const result = resultOf(outcome, answeredInMs, deps.config.WEBHOOK_SLOW_MS);
    const pausedMs = await deps.gate.leave(webhookId, token, result);
    if (pausedMs > 0)
      deps.logger.warn(
        { webhookId, pausedMs },
        'webhook endpoint keeps failing or answering slowly; its deliveries paused',
      );
  }
}

/** The webhook of a job and its client (read from the delivery for a job queued without its webhook). */
async function endpointOf(
  deps: FairDeliverDeps,
  job: { deliveryId: number; webhookId?: number | undefined },
): Promise<{ webhookId: number; clientId: number } | undefined> {
  if (job.webhookId === undefined) {
    const webhook = (await deps.store.webhooks.target(job.deliveryId))?.webhook;
    return webhook && { webhookId: webhook.webhookId, clientId: webhook.clientId };
  }
  const clientId = await deps.clientOf(job.webhookId);
  return clientId === undefined ? undefined : { webhookId: job.webhookId, clientId };
}

/** Deferred for a moment while the slots are held by attempts that answer, about a time-out while they are slow. */
function busy(deps: FairDeliverDeps, slow: boolean, random: () => number): Deferral {
  const timeout = deps.config.WEBHOOK_TIMEOUT_MS;
  const [low, high] = slow ? [timeout / 2, timeout] : BUSY_WAIT_MS;
  return { kind: 'deferred', reason: 'busy', waitMs: Math.floor(low + random() * (high - low)) };
}
