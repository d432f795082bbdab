import { describe, expect, it } from 'vitest';
import { startRelay } from '../../src/processes/webhook.relay-runner.js';
import type { DeliveryAttempt, Store } from '../../src/store/port/store.port.js';
import pino from 'pino';

// The relay's schedule over a fake outbox; the outbox itself is the store's (contract tests).
function fakeOutbox(signals: boolean) {
  const pending: DeliveryAttempt[] = [];
  const handed: number[] = [];
  let signal: (() => void) | undefined;
  const webhooks = {
    async unenqueued() {
      return pending.splice(0);
    },
    async overdue() {
      return [];
    },
    async markEnqueued() {},
    ...(signals
      ? {
          watchOutbox(onRecorded: () => void) {
            signal = onRecorded;
            return { close: async () => void (signal = undefined) };
          },
        }
      : {}),
  } as unknown as Store['webhooks'];
  const queue = {
    async enqueue(attempts: readonly DeliveryAttempt[]) {
      handed.push(...attempts.map((a) => a.deliveryId));
    },
    async missing() {
      return [];
    },
  };
  const record = (deliveryId: number) =>
    pending.push({ deliveryId, webhookId: 1, attempt: 1, dueAt: 0 } as DeliveryAttempt);
  return { webhooks, queue, handed, record, signal: () => signal?.() };
}

const HOUR = 3_600_000;

describe('the webhook relay', () => {
  it('hands a delivery over as soon as the store signals it, without waiting for its schedule', async () => {
    const outbox = fakeOutbox(true);
    const relay = startRelay(
      {
        store: { webhooks: outbox.webhooks },
        queue: outbox.queue,
        clock: Date.now,
        logger: pino({ level: 'silent' }),
      },
      { intervalMs: HOUR, watchedIntervalMs: HOUR },
    );
    outbox.record(7);
    outbox.signal();
    await expect.poll(() => outbox.handed).toEqual([7]);
    outbox.record(8);
    outbox.signal();
    outbox.signal();
    await expect.poll(() => outbox.handed).toEqual([7, 8]);
    await relay.stop();
  });

  it('polls on its schedule where the store has no signal', async () => {
    const outbox = fakeOutbox(false);
    const relay = startRelay(
      {
        store: { webhooks: outbox.webhooks },
        queue: outbox.queue,
        clock: Date.now,
        logger: pino({ level: 'silent' }),
      },
      { intervalMs: 10, watchedIntervalMs: HOUR },
    );
    outbox.record(9);
    await expect.poll(() => outbox.handed).toEqual([9]);
    await relay.stop();
  });
});
