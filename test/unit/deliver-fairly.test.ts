// deliverFairly's decisions with a gate and a store that the test plays: what waits, how long, and what the
// breaker is told.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import type { AttemptResult, EndpointGate, GateEntry } from '../../src/redis/endpoint-gate.js';
import { deliverFairly, type FairDeliverDeps } from '../../src/services/deliver-webhook.js';
import type { ClaimOutcome, DeliveryTarget, WebhookStore } from '../../src/store/port/store.port.js';
import type { PostResult } from '../../src/webhooks/webhook-sender.js';

const TARGET = {
  deliveryId: 1,
  state: 'pending',
  attempts: 0,
  webhook: {
    webhookId: 7,
    clientId: 1,
    url: 'https://h.example/',
    active: true,
    failing: false,
    secret: 's',
  },
  event: {
    eventId: 'evt_1',
    type: 'order.updated',
    orderId: 1,
    clientId: 1,
    sequence: 1,
    createdAt: 0,
    order: {
      orderId: 1,
      createdAt: 0,
      currency: 'USD',
      taxCents: 0,
      taxModel: null,
      referenceId: null,
    },
    items: [],
  },
} as unknown as DeliveryTarget;

function world(
  entry: GateEntry,
  {
    claim = { kind: 'claimed', target: TARGET } as ClaimOutcome,
    post = { ok: true, status: 204 } as PostResult,
  } = {},
) {
  const left: AttemptResult[] = [];
  const posted: string[] = [];
  const gate: EndpointGate = {
    enter: async () => entry,
    leave: async (_webhookId, _token, result) => {
      left.push(result);
      return 0;
    },
  };
  const webhooks = {
    claim: async () => claim,
    recordAttempt: async () => true,
    target: async () => TARGET,
  } as unknown as WebhookStore;
  const deps: FairDeliverDeps = {
    store: { webhooks },
    sender: {
      post: async (request) => {
        posted.push(request.eventId);
        return post;
      },
    },
    gate,
    clock: () => 1_000_000,
    logger: createLogger({ LOG_LEVEL: 'silent', LOG_PRETTY: 'false' }, 'test'),
    config: { WEBHOOK_RETRY_BASE_MS: 1000, WEBHOOK_MAX_ATTEMPTS: 15, WEBHOOK_TIMEOUT_MS: 10_000 },
    random: () => 0.5,
  };
  return { deps, left, posted };
}

const job = { deliveryId: 1, attempt: 1, webhookId: 7 };

describe('deliverFairly', () => {
  it('defers an attempt whose endpoint is busy: briefly when it answers, about a time-out when it is slow', async () => {
    const answering = world({ kind: 'busy', slow: false });
    expect(await deliverFairly(answering.deps, job)).toEqual({
      kind: 'deferred',
      reason: 'busy',
      waitMs: 600,
    });
    const slow = world({ kind: 'busy', slow: true });
    expect(await deliverFairly(slow.deps, job)).toEqual({ kind: 'deferred', reason: 'busy', waitMs: 7500 });
    expect([...answering.posted, ...slow.posted, ...answering.left, ...slow.left]).toEqual([]);
  });

  it('defers an attempt whose endpoint is paused past the pause, spread over as long again', async () => {
    const paused = world({ kind: 'paused', waitMs: 30_000 });
    expect(await deliverFairly(paused.deps, job)).toEqual({
      kind: 'deferred',
      reason: 'paused',
      waitMs: 45_000,
    });
    const ending = world({ kind: 'paused', waitMs: 10 });
    expect(await deliverFairly(ending.deps, job)).toEqual({
      kind: 'deferred',
      reason: 'paused',
      waitMs: 510,
    });
  });

  it('tells the breaker a success, a failure, or nothing sent', async () => {
    const ok = world({ kind: 'enter', token: 't' });
    expect(await deliverFairly(ok.deps, job)).toBe('delivered');
    expect([ok.posted, ok.left]).toEqual([['evt_1'], ['ok']]);
    const failed = world({ kind: 'enter', token: 't' }, { post: { ok: false, error: 'answered 500' } });
    expect(await deliverFairly(failed.deps, job)).toBe('retry');
    expect(failed.left).toEqual(['failed']);
    const dropped = world({ kind: 'enter', token: 't' }, { claim: { kind: 'dropped' } });
    expect(await deliverFairly(dropped.deps, job)).toBe('dropped');
    expect([dropped.posted, dropped.left]).toEqual([[], ['none']]);
  });

  it('finds the webhook of a job queued without it', async () => {
    const old = world({ kind: 'enter', token: 't' });
    expect(await deliverFairly(old.deps, { deliveryId: 1, attempt: 1 })).toBe('delivered');
  });
});
