import { afterEach, describe, expect, it } from 'vitest';
import { startPrivateRedis, type RunningRedis } from '../../scripts/redis.js';
import { moveItem } from '../../src/services/item-lifecycle.js';
import { addWebhook } from '../../src/services/webhooks.js';
import type { WebhookWithSecret } from '../../src/store/port/store.port.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import {
  createTestService,
  signed,
  stopChild,
  type Credentials,
  type TestService,
} from '../helpers/test-service.js';
import { until } from '../helpers/wait.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const WALDEN = 2002;

let service: TestService;
let receiver: Receiver;
let redis: RunningRedis | undefined;
let buyer: Credentials;
let webhook: WebhookWithSecret;

afterEach(async () => {
  await service?.close();
  await receiver?.close();
  await redis?.stop();
  redis = undefined;
});

async function start(env: Record<string, string> = {}) {
  receiver = await startReceiver();
  service = await createTestService({
    env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_BASE_MS: '100', ...env },
  });
  await service.importCatalog(VENDORS, LISTINGS);
  buyer = await service.client('faults buyer');
  const added = await addWebhook(
    { store: service.deps.store, allowPrivate: true, clock: Date.now },
    buyer.clientId,
    receiver.url(),
  );
  if (added.kind !== 'added') throw new Error(added.message);
  webhook = added.webhook;
}

async function placeOrder(): Promise<{ orderId: number; itemIds: number[] }> {
  const body = orderBody(buyer.ccToken, { listings: [{ listingId: WALDEN, quantity: 1 }] });
  const res = await signed(service.app, buyer, 'POST', '/v1/orders', body);
  expect(res.status).toBe(200);
  const items = (res.body.listings as { orderItems: { orderItemId: number }[] }[]).flatMap(
    (l) => l.orderItems,
  );
  return { orderId: res.body.orderId as number, itemIds: items.map((i) => i.orderItemId) };
}

/** Each delivery's state, with its attempts and whether its next attempt was handed over while pending. */
async function states(): Promise<string> {
  const rows = await service.probe.all<{ state: string; attempts: number; enqueued_at: number | null }>(
    'SELECT state, attempts, enqueued_at FROM webhook_deliveries ORDER BY delivery_id',
  );
  return rows
    .map((r) =>
      r.state === 'pending'
        ? `pending:${r.attempts}:${r.enqueued_at === null ? 'unhanded' : 'handed'}`
        : r.state,
    )
    .join(',');
}

/** The event ids the receiver took (answered 2xx) at least once, with a valid signature. */
const delivered = () =>
  new Set(
    receiver.received
      .filter((r) => r.answered === 204 && receiver.verify(r, webhook.secret))
      .map((r) => r.event.eventId),
  );

const recordedEvents = async () =>
  (await service.probe.all<{ event_id: string }>('SELECT event_id FROM order_events')).map((r) => r.event_id);

describe('when the worker is killed in the middle of a delivery', () => {
  it('then another worker delivers the event', async () => {
    await start();
    receiver.answer(() => 'hang');
    const worker = await service.startWorker();
    await placeOrder();
    await until(() => receiver.received.length === 1, 10_000, 'first attempt under way');
    await stopChild(worker, 'SIGKILL');
    receiver.answer(() => 204);

    await service.startWorker();
    await until(() => receiver.received.length === 2, 45_000, 'attempt by the new worker');
    const [eventId] = await recordedEvents();
    expect(receiver.received.map((r) => r.event.eventId)).toEqual([eventId, eventId]);
    expect(receiver.verify(receiver.received[1]!, webhook.secret)).toBe(true);
    await until(async () => (await states()) === 'delivered', 5000, 'delivery recorded');
  }, 90_000);
});

describe('when Redis restarts empty with deliveries in the queue and events recorded while it was down', () => {
  it('then every event recorded is still delivered', async () => {
    redis = await startPrivateRedis();
    await start({ REDIS_URL: redis.url, WEBHOOK_RETRY_BASE_MS: '3000' });
    receiver.answer(() => 500);
    await service.startWorker();
    const { itemIds } = await placeOrder();
    // The first attempt failed: its retry waits in Redis as a delayed job, and the store knows it handed it over.
    await until(async () => (await states()) === 'pending:1:handed', 10_000, 'retry handed to the queue');

    await redis.stop();
    // A change while Redis is down: recorded with its event, which the relay cannot hand to the queue yet.
    expect(await moveItem(service.deps, { orderItemId: itemIds[0]!, to: 35 })).toMatchObject({
      kind: 'moved',
    });
    receiver.answer(() => 204);
    redis = await startPrivateRedis(Number(new URL(redis.url).port));

    const events = await recordedEvents();
    expect(events).toHaveLength(2);
    await until(() => events.every((id) => delivered().has(id)), 60_000, 'both events delivered');
    await until(async () => (await states()) === 'delivered,delivered', 5000, 'deliveries recorded');
  }, 90_000);
});
