// deliverFairly's decisions with a gate and a store that the test plays: what waits, how long, and what the
// breaker is told.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import type { AttemptResult, EndpointGate, GateEntry } from '../../src/redis/endpoint-gate.js';
import { deliverFairly, type FairDeliverDeps } from '../../src/services/deliver-webhook.js';
import type { ClaimOutcome, DeliveryTarget, WebhookStore } from '../../src/store/port/store.port.js';
import type { PostResult } from '../../src/webhooks/webhook-sender.js';
import { createClientSlots } from '../../src/webhooks/client-slots.js';

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
    answerMs = 20,
    perClient = 4,
  } = {},
) {
  const left: AttemptResult[] = [];
  const posted: string[] = [];
  const entered: number[] = [];
  let now = 1_000_000;
  const gate: EndpointGate = {
    enter: async (webhookId) => {
      entered.push(webhookId);
      return entry;
    },
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
        now += answerMs;
        return post;
      },
    },
    gate,
    clientSlots: createClientSlots({ perClient, slowAfterMs: 1000, clock: () => now }),
    clientOf: async (webhookId) => (webhookId === 7 ? 1 : undefined),
    clock: () => now,
    logger: createLogger({ LOG_LEVEL: 'silent', LOG_PRETTY: 'false' }, 'test'),
    config: {
      WEBHOOK_RETRY_BASE_MS: 1000,
      WEBHOOK_MAX_ATTEMPTS: 15,
      WEBHOOK_TIMEOUT_MS: 10_000,
      WEBHOOK_SLOW_MS: 5000,
    },
    random: () => 0.5,
  };
  return { deps, left, posted, entered, advance: (ms: number) => (now += ms) };
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

  it('tells the breaker a delivery answered later than WEBHOOK_SLOW_MS as slow, one answered in time as ok', async () => {
    const slow = world({ kind: 'enter', token: 't' }, { answerMs: 5001 });
    expect(await deliverFairly(slow.deps, job)).toBe('delivered');
    expect(slow.left).toEqual(['slow']);
    const inTime = world({ kind: 'enter', token: 't' }, { answerMs: 5000 });
    expect(await deliverFairly(inTime.deps, job)).toBe('delivered');
    expect(inTime.left).toEqual(['ok']);
  });

  it("defers an attempt whose client holds its share of the worker's slots, without asking its endpoint", async () => {
    const full = world({ kind: 'enter', token: 't' }, { perClient: 2 });
    const first = full.deps.clientSlots.take(1);
    full.deps.clientSlots.take(1);
    expect(await deliverFairly(full.deps, job)).toEqual({ kind: 'deferred', reason: 'busy', waitMs: 600 });
    // Held by attempts under way for more than a second: about a time-out.
    full.advance(1001);
    expect(await deliverFairly(full.deps, job)).toEqual({ kind: 'deferred', reason: 'busy', waitMs: 7500 });
    expect([full.entered, full.posted]).toEqual([[], []]);
    // Another client's attempt is not held back, and a slot given back is the client's again.
    expect(full.deps.clientSlots.take(2).kind).toBe('taken');
    if (first.kind === 'taken') first.release();
    expect(await deliverFairly(full.deps, job)).toBe('delivered');
    expect(full.deps.clientSlots.inUse(1)).toBe(1);
  });

  it("gives back the client's slot whatever the attempt became", async () => {
    for (const entry of [
      { kind: 'enter', token: 't' },
      { kind: 'busy', slow: false },
      { kind: 'paused', waitMs: 10 },
    ] as const) {
      const one = world(entry, { perClient: 1 });
      await deliverFairly(one.deps, job);
      expect(one.deps.clientSlots.inUse(1)).toBe(0);
    }
    const throwing = world({ kind: 'enter', token: 't' }, { perClient: 1 });
    throwing.deps.store.webhooks.claim = async () => {
      throw new Error('store away');
    };
    await expect(deliverFairly(throwing.deps, job)).rejects.toThrow('store away');
    expect(throwing.deps.clientSlots.inUse(1)).toBe(0);
  });

  it('finds the webhook of a job queued without it', async () => {
    const old = world({ kind: 'enter', token: 't' });
    expect(await deliverFairly(old.deps, { deliveryId: 1, attempt: 1 })).toBe('delivered');
  });
});
