// Webhook delivery is fair (issue 25, point 4): one endpoint takes at most WEBHOOK_CONCURRENCY_PER_ENDPOINT slots
// across the workers, its backlog waits in the queue rather than in slots, and an endpoint that keeps failing is
// paused, its deliveries kept for when it answers again.
import { afterEach, describe, expect, it } from 'vitest';
import { processOrder } from '../helpers/process-order.js';
import { addWebhook } from '../../src/services/webhooks.js';
import type { WebhookWithSecret } from '../../src/store/port/store.port.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';
import { sleep, until } from '../helpers/wait.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

let service: TestService;
let receivers: Receiver[] = [];

afterEach(async () => {
  // Receivers first: a hung attempt ends when its connection does, so the worker stops at once.
  await Promise.all(receivers.map((r) => r.close()));
  receivers = [];
  await service?.close();
});

async function start(env: Record<string, string>): Promise<void> {
  service = await createTestService({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', ...env } });
  await service.importCatalog(VENDORS, LISTINGS);
}

async function receiver(answer: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
  const started = await startReceiver(answer);
  receivers.push(started);
  return started;
}

/** A client whose webhook posts to `to`. */
async function clientWithWebhook(name: string, to: Receiver) {
  const buyer = await service.client(name);
  const deps = { store: service.deps.store, allowPrivate: true, clock: Date.now };
  const added = await addWebhook(deps, buyer.clientId, to.url(`/${name}`));
  if (added.kind !== 'added') throw new Error(added.message);
  return { buyer, webhook: added.webhook };
}

/** An order of the client, settled in this process: its event is recorded when this returns. */
async function settledOrder(buyer: Credentials): Promise<number> {
  const res = await signed(service.app, buyer, 'POST', '/v1/orders', orderBody(buyer.ccToken), {
    headers: { Prefer: 'respond-async' },
  });
  const orderId = res.body.orderId as number;
  await processOrder({ ...service.deps, maxAttempts: 5 }, orderId);
  return orderId;
}

/** `count` pending deliveries to the webhook: one order's event, sent again by replays. */
async function backlog(buyer: Credentials, webhook: WebhookWithSecret, count: number): Promise<void> {
  await settledOrder(buyer);
  for (let i = 1; i < count; i += 1)
    await service.deps.store.webhooks.replay(webhook.webhookId, 0, Date.now());
}

const deliveryStates = async (webhookId: number) =>
  (
    await service.probe.all<{ state: string }>(
      'SELECT state FROM webhook_deliveries WHERE webhook_id = ?',
      webhookId,
    )
  ).map((r) => r.state);

describe('when one client’s receiver hangs with a backlog larger than all the delivery slots', () => {
  it('then it holds at most its endpoint’s share of them, and another client’s event arrives within 2 s', async () => {
    await start({
      WEBHOOK_CONCURRENCY: '8',
      WEBHOOK_CONCURRENCY_PER_ENDPOINT: '2',
      WEBHOOK_TIMEOUT_MS: '10000',
      WEBHOOK_BREAKER_FAILURES: '5',
    });
    const hanging = await receiver(() => 'hang');
    const healthy = await receiver(() => 204);
    const slow = await clientWithWebhook('slow', hanging);
    const fair = await clientWithWebhook('fair', healthy);
    await backlog(slow.buyer, slow.webhook, 40);
    await service.startWorker();
    await until(() => hanging.open >= 2, 15_000, 'the hanging receiver holding its share');

    await settledOrder(fair.buyer);
    await until(() => healthy.received.length > 0, 2000, 'the other client’s event delivered');
    expect(healthy.received.map((r) => r.path)).toEqual(['/fair']);
    expect(hanging.maxOpen).toBeLessThanOrEqual(2);
    const pending = (await deliveryStates(slow.webhook.webhookId)).filter((s) => s === 'pending');
    expect(pending).toHaveLength(40);
  }, 60_000);
});

describe('when a receiver keeps failing', () => {
  it('then its endpoint is paused after WEBHOOK_BREAKER_FAILURES failures, and its backlog is delivered once it answers again', async () => {
    await start({
      WEBHOOK_CONCURRENCY_PER_ENDPOINT: '2',
      WEBHOOK_RETRY_BASE_MS: '100',
      WEBHOOK_BREAKER_FAILURES: '3',
      WEBHOOK_BREAKER_PAUSE_MS: '3000',
    });
    const failing = await receiver(() => 500);
    const client = await clientWithWebhook('flaky', failing);
    await backlog(client.buyer, client.webhook, 20);
    await service.startWorker();
    await until(() => failing.received.length >= 3, 15_000, 'three failed attempts');

    // Paused: while it rests nothing more is tried, beyond attempts that had started before it failed a third time.
    await sleep(1500);
    expect(failing.received.length).toBeLessThanOrEqual(3 + 2 - 1);
    expect(await deliveryStates(client.webhook.webhookId)).toEqual(Array(20).fill('pending'));
    expect(await service.deps.store.webhooks.find(client.webhook.webhookId)).toMatchObject({
      failing: false,
    });

    failing.answer(() => 204);
    await until(
      async () => (await deliveryStates(client.webhook.webhookId)).every((s) => s === 'delivered'),
      60_000,
      'the backlog delivered after the pause',
    );
    expect(failing.maxOpen).toBeLessThanOrEqual(2);
  }, 90_000);
});
