// Webhook delivery is fair (issue 25, point 4): one endpoint takes at most WEBHOOK_CONCURRENCY_PER_ENDPOINT slots
// across the workers, its backlog waits in the queue rather than in slots, and an endpoint that keeps failing is
// paused, its deliveries kept for when it answers again. A client's endpoints together take at most
// WEBHOOK_CONCURRENCY_PER_CLIENT of a worker's slots, and a receiver that keeps answering later than
// WEBHOOK_SLOW_MS is paused as a failing one is.
import { afterEach, describe, expect, it } from 'vitest';
import { processOrder } from '../helpers/process-order.js';
import { addWebhook } from '../../src/services/webhooks.js';
import type { WebhookWithSecret } from '../../src/store/port/store.port.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';
import { sleep, until } from '../helpers/wait.js';
import { startReceiver, type Answer, type Receiver } from '../helpers/webhook-receiver.js';

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
  return anotherWebhook(await service.client(name), to, `/${name}`);
}

/** A client with one webhook per receiver, each answering `answer`. */
async function clientWithReceivers(name: string, count: number, answer: Answer) {
  const hooks: { receiver: Receiver; webhook: WebhookWithSecret }[] = [];
  let buyer: Credentials | undefined;
  for (let i = 0; i < count; i += 1) {
    const to = await receiver(answer);
    const added =
      i === 0 ? await clientWithWebhook(name, to) : await anotherWebhook(buyer!, to, `/${name}/${i}`);
    buyer = added.buyer;
    hooks.push({ receiver: to, webhook: added.webhook });
  }
  return { buyer: buyer!, hooks };
}

async function anotherWebhook(buyer: Credentials, to: Receiver, path: string) {
  const deps = { store: service.deps.store, allowPrivate: true, clock: Date.now };
  const added = await addWebhook(deps, buyer.clientId, to.url(path));
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

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;

describe('when one client keeps 8 receivers that answer 200 after 6 s, with a backlog', () => {
  it("then it holds at most its share of the worker's slots, and another client's events arrive within 1 s (p50)", async () => {
    // The defaults: 32 slots, 4 per endpoint, a quarter (8) per client, a time-out of 10 s.
    await start({});
    const slow = await clientWithReceivers('slow', 8, () => ({ status: 200, afterMs: 6000 }));
    const prompt = await clientWithReceivers('prompt', 1, () => 204);
    // 4 events to each of the 8 endpoints, then each sent again 30 times: 992 deliveries, over 3 minutes' work at
    // 32 at once.
    for (let i = 0; i < 4; i += 1) await settledOrder(slow.buyer);
    for (const { webhook } of slow.hooks)
      for (let i = 0; i < 30; i += 1)
        await service.deps.store.webhooks.replay(webhook.webhookId, 0, Date.now());
    let mostOpen = 0;
    const sampler = setInterval(() => {
      mostOpen = Math.max(
        mostOpen,
        slow.hooks.reduce((n, h) => n + h.receiver.open, 0),
      );
    }, 20);
    try {
      await service.startWorker();
      const opened = () => slow.hooks.reduce((n, h) => n + h.receiver.received.length, 0);
      await until(() => opened() >= 8, 30_000, 'the slow receivers taking their share');

      // Spread over the slow receivers' answers, so that some arrive while their slots turn over, and out of step
      // with the relay's pass each second on SQLite (which has no signal of new deliveries).
      const EVENTS = 12;
      for (let i = 0; i < EVENTS; i += 1) {
        await settledOrder(prompt.buyer);
        await sleep(700);
      }
      const received = prompt.hooks[0]!.receiver.received;
      await until(() => received.length >= EVENTS, 60_000, "the other client's events delivered");
      const late = received.map((r) => r.at - Date.parse(r.event.createDate));
      expect(median(late), `delays ${late.join(', ')} ms`).toBeLessThanOrEqual(1000);
      expect(mostOpen).toBeLessThanOrEqual(8);
    } finally {
      clearInterval(sampler);
    }
  }, 120_000);
});

describe('when a receiver answers 200, but later than WEBHOOK_SLOW_MS', () => {
  it('then its deliveries are delivered, and its endpoint is paused after WEBHOOK_BREAKER_FAILURES such answers', async () => {
    await start({
      WEBHOOK_SLOW_MS: '500',
      WEBHOOK_CONCURRENCY_PER_ENDPOINT: '1',
      WEBHOOK_BREAKER_FAILURES: '3',
      WEBHOOK_BREAKER_PAUSE_MS: '30000',
    });
    const dawdling = await receiver(() => ({ status: 200, afterMs: 800 }));
    const { buyer, webhook } = await clientWithWebhook('dawdler', dawdling);
    await backlog(buyer, webhook, 10);
    await service.startWorker();
    const states = () => deliveryStates(webhook.webhookId);
    await until(
      async () => (await states()).filter((s) => s === 'delivered').length >= 3,
      30_000,
      'three slow answers',
    );
    // Paused for 30 s: nothing more is sent meanwhile, and nothing is retried or failed.
    await sleep(3000);
    expect(dawdling.received).toHaveLength(3);
    const now = await states();
    expect(now.filter((s) => s === 'delivered')).toHaveLength(3);
    expect(now.filter((s) => s === 'pending')).toHaveLength(7);
  }, 60_000);
});
