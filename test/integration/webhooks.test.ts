import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeploymentRegistry } from '../../src/http/metrics.js';
import { moveItem } from '../../src/services/item-lifecycle.js';
import { reconcileOnce } from '../../src/services/reconcile.js';
import { addWebhook } from '../../src/services/webhooks.js';
import type { WebhookWithSecret } from '../../src/store/port/store.port.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { compileDocument, defaultDocument } from '../helpers/openapi-validator.js';
import { valueOf } from '../helpers/prometheus-text.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';
import { until } from '../helpers/wait.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const WALDEN = 2002;
const RETRY_BASE_MS = 200;

let service: TestService;
let receiver: Receiver;

beforeAll(async () => {
  service = await createTestService({
    env: {
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_BASE_MS: String(RETRY_BASE_MS),
      WEBHOOK_MAX_ATTEMPTS: '3',
      WEBHOOK_TIMEOUT_MS: '1000',
    },
  });
  await service.importCatalog(VENDORS, LISTINGS);
  receiver = await startReceiver();
  await service.startWorker();
});
afterAll(async () => {
  await service?.close();
  await receiver?.close();
});

/** A new client with a webhook at its own path of the receiver. */
async function clientWithWebhook(name: string): Promise<{ buyer: Credentials; webhook: WebhookWithSecret }> {
  const buyer = await service.client(name);
  const deps = { store: service.deps.store, allowPrivate: true, clock: Date.now };
  const added = await addWebhook(deps, buyer.clientId, receiver.url(`/${name}`));
  if (added.kind !== 'added') throw new Error(added.message);
  return { buyer, webhook: added.webhook };
}

const receivedAt = (path: string) => receiver.received.filter((r) => r.path === `/${path}`);

/** The first post of each event at a path: delivery is at least once, so a post may come twice. */
const eventsAt = (path: string) => [
  ...new Map(
    receivedAt(path)
      .reverse()
      .map((r) => [r.event.eventId, r]),
  ).values(),
];

async function order(buyer: Credentials, overrides: Record<string, unknown> = {}) {
  const body = orderBody(buyer.ccToken, { listings: [{ listingId: WALDEN, quantity: 2 }], ...overrides });
  const res = await signed(service.app, buyer, 'POST', '/v1/orders', body);
  expect(res.status).toBe(200);
  return res.body as {
    orderId: number;
    listings: { orderItems: { orderItemId: number; status: number }[] }[];
  };
}

const getOrder = async (buyer: Credentials, orderId: number) =>
  (await signed(service.app, buyer, 'GET', `/v1/orders/${orderId}`)).body;

const move = (orderItemId: number, to: number, extra: Record<string, unknown> = {}) =>
  moveItem(service.deps, { orderItemId, to, ...extra });

describe('when an order of a client with a webhook changes', () => {
  it('then each change is posted once, signed, in sequence, with the order as GET showed it', async () => {
    const { buyer, webhook } = await clientWithWebhook('story');
    const placed = await order(buyer);
    const [first, second] = placed.listings.flatMap((l) => l.orderItems);
    await until(() => eventsAt('story').length >= 1, 20_000, 'settlement event');
    const afterSettle = await getOrder(buyer, placed.orderId);
    expect(await move(first!.orderItemId, 35, { shippingCompany: 'DHL', trackingId: 'JD1' })).toMatchObject({
      kind: 'moved',
    });
    expect(await move(second!.orderItemId, 17)).toMatchObject({ kind: 'moved' });
    await until(() => eventsAt('story').length >= 3, 20_000, 'move events');
    const finalOrder = await getOrder(buyer, placed.orderId);

    // As the OpenAPI document's `webhooks` describes it, compiled once for every post.
    const asDocumented = compileDocument(defaultDocument()).schema('#/components/schemas/OrderEvent');
    const posts = eventsAt('story').sort((a, b) => a.event.sequence - b.event.sequence);
    expect(posts.map((p) => p.event.sequence)).toEqual([1, 2, 3]);
    expect(new Set(posts.map((p) => p.event.eventId)).size).toBe(3);
    for (const post of posts) {
      expect(receiver.verify(post, webhook.secret)).toBe(true);
      expect(post.headers['content-type']).toBe('application/json');
      expect(post.headers['svc-event-id']).toBe(post.event.eventId);
      expect(post.event.eventId).toMatch(/^evt_[0-9a-f]{24}$/);
      expect(Math.abs(Date.parse(String(post.headers['svc-date'])) - Date.now())).toBeLessThan(60_000);
      expect(Object.keys(post.event)).toEqual(['eventId', 'type', 'createDate', 'sequence', 'order']);
      expect(post.event.type).toBe('order.updated');
      expect(asDocumented(post.event), JSON.stringify(asDocumented.errors)).toBe(true);
    }
    expect(posts[0]!.event.order).toEqual(afterSettle);
    expect(posts[2]!.event.order).toEqual(finalOrder);
    const statuses = posts.map((p) =>
      p.event.order.listings.flatMap((l) => l.orderItems.map((i) => i.status)),
    );
    expect(statuses).toEqual([
      [5, 5],
      [35, 5],
      [35, 17],
    ]);
    expect(receiver.verify(posts[0]!, 'whsec_another')).toBe(false);
  });

  it('then acceptance records no event, and an order that buys nothing records one', async () => {
    const { buyer } = await clientWithWebhook('nothing');
    const body = orderBody(buyer.ccToken, { listings: [{ listingId: WALDEN, quantity: 1, maxPrice: 1 }] });
    const res = await signed(service.app, buyer, 'POST', '/v1/orders', body, {
      headers: { Prefer: 'respond-async' },
    });
    const orderId = res.body.orderId as number;
    await until(() => eventsAt('nothing').length >= 1, 20_000, 'event of the rejected order');
    const [post] = eventsAt('nothing');
    expect(post!.event).toMatchObject({ sequence: 1, order: { orderId } });
    expect(post!.event.order.listings[0]!.orderItems[0]!.status).toBe(53);
    expect(await service.probe.scalar('SELECT count(*) FROM order_events WHERE order_id = ?', orderId)).toBe(
      1,
    );
  });

  it('then a reconciliation move records an event too', async () => {
    const { buyer } = await clientWithWebhook('deadline');
    const placed = await order(buyer, { listings: [{ listingId: WALDEN, quantity: 1 }] });
    const item = placed.listings[0]!.orderItems[0]!;
    await move(item.orderItemId, 93, { extraShippingCents: 250 });
    await until(() => eventsAt('deadline').length >= 2, 20_000, 'settlement and request events');
    const counts = await reconcileOnce(service.deps, Date.now() + 49 * 3_600_000);
    expect(counts.extraShippingTimedOut).toBeGreaterThanOrEqual(1);
    await until(() => eventsAt('deadline').length >= 3, 20_000, 'reconciliation event');
    const last = eventsAt('deadline').find((p) => p.event.sequence === 3)!;
    expect(last.event.order).toEqual(await getOrder(buyer, placed.orderId));
    expect(last.event.order.listings[0]!.orderItems[0]!.status).toBe(90);
  });
});

describe('when a receiver fails', () => {
  it('then a 500 and a timeout are retried with growing waits until a 2xx', async () => {
    const { buyer, webhook } = await clientWithWebhook('flaky');
    receiver.answer((r) => {
      if (r.path !== '/flaky') return 204;
      const tries = receivedAt('flaky').length;
      return tries === 1 ? 500 : tries === 2 ? 'hang' : 204;
    });
    try {
      await order(buyer);
      await until(() => receivedAt('flaky').length >= 3, 20_000, 'third attempt');
    } finally {
      receiver.answer(() => 204);
    }
    const [a, b, c] = receivedAt('flaky');
    expect(new Set([a, b, c].map((p) => p!.body)).size).toBe(1);
    for (const p of [a, b, c]) expect(receiver.verify(p!, webhook.secret)).toBe(true);
    expect(b!.at - a!.at).toBeGreaterThanOrEqual(RETRY_BASE_MS);
    // The second attempt waited out the 1 s timeout, then twice the base.
    expect(c!.at - b!.at).toBeGreaterThanOrEqual(1000 + 2 * RETRY_BASE_MS);
    await until(async () => (await deliveryStates(webhook.webhookId)) === 'delivered:3', 10_000, 'recorded');
  });

  it('then after the last attempt the webhook is failing, later events are still tried, and a success clears it', async () => {
    const { buyer, webhook } = await clientWithWebhook('down');
    receiver.answer((r) => (r.path === '/down' ? 503 : 204));
    try {
      await order(buyer);
      await until(async () => (await deliveryStates(webhook.webhookId)) === 'failed:3', 20_000, 'given up');
      expect(receivedAt('down')).toHaveLength(3);
      expect(await service.deps.store.webhooks.list(buyer.clientId)).toEqual([
        {
          webhookId: webhook.webhookId,
          clientId: buyer.clientId,
          url: webhook.url,
          active: true,
          failing: true,
        },
      ]);
      // What the alert rules BookordersWebhookAttemptsFailing and BookordersWebhookGivenUp read.
      const deployment = createDeploymentRegistry(service.deps);
      const attempts = async (outcome: string) =>
        valueOf(await deployment.metrics(), 'bookorders_webhook_attempts_total', { outcome }) ?? 0;
      await until(async () => (await attempts('gave-up')) >= 1, 10_000, 'gave-up counted');
      expect(await attempts('retry')).toBeGreaterThanOrEqual(2);
    } finally {
      receiver.answer(() => 204);
    }
    await order(buyer);
    await until(() => eventsAt('down').length >= 2, 20_000, 'later event tried');
    await until(
      async () => !(await service.deps.store.webhooks.find(webhook.webhookId))!.failing,
      5000,
      'failing cleared',
    );
  });
});

describe('when an operator replays a webhook', () => {
  it('then every event of the client since then is sent again, with the same id and body', async () => {
    const { buyer, webhook } = await clientWithWebhook('replay');
    const before = Date.now();
    await order(buyer);
    await order(buyer);
    await until(() => eventsAt('replay').length >= 2, 20_000, 'two events');
    const bodies = eventsAt('replay').map((p) => p.body);
    const replayed = await service.deps.store.webhooks.replay(webhook.webhookId, before, Date.now());
    expect(replayed).toBe(2);
    const postsOf = (body: string) => receivedAt('replay').filter((p) => p.body === body).length;
    await until(() => bodies.every((body) => postsOf(body) >= 2), 20_000, 'replayed events');
    expect(await service.deps.store.webhooks.replay(webhook.webhookId, Date.now() + 1, Date.now())).toBe(0);
  });
});

describe('when an order of 250 items changes item by item', () => {
  it('then each event is posted, and replayed, with every item as GET showed it after that change', async () => {
    const { buyer, webhook } = await clientWithWebhook('large');
    await service.probe.exec(`UPDATE listings SET stock = stock + 250 WHERE listing_id = ${WALDEN}`);
    const since = Date.now();
    const body = orderBody(buyer.ccToken, { listings: [{ listingId: WALDEN, quantity: 250 }] });
    const res = await signed(service.app, buyer, 'POST', '/v1/orders', body, {
      headers: { Prefer: 'respond-async' },
    });
    const orderId = res.body.orderId as number;
    await until(() => eventsAt('large').length >= 1, 60_000, 'settlement event');
    const views = [await getOrder(buyer, orderId)];
    const items = (views[0] as { listings: { orderItems: { orderItemId: number }[] }[] }).listings.flatMap(
      (l) => l.orderItems,
    );
    expect(items).toHaveLength(250);
    for (const [k, item] of items.slice(0, 3).entries()) {
      const moved = await move(item.orderItemId, 35, { shippingCompany: 'DHL', trackingId: `JD${k}` });
      expect(moved).toMatchObject({ kind: 'moved' });
      await until(() => eventsAt('large').length >= k + 2, 20_000, `event of move ${k}`);
      views.push(await getOrder(buyer, orderId));
    }
    const posts = eventsAt('large').sort((a, b) => a.event.sequence - b.event.sequence);
    expect(posts.map((p) => p.event.order)).toEqual(views);

    const bodies = posts.map((p) => p.body);
    expect(await service.deps.store.webhooks.replay(webhook.webhookId, since, Date.now())).toBe(4);
    const postsOf = (sent: string) => receivedAt('large').filter((p) => p.body === sent).length;
    await until(() => bodies.every((sent) => postsOf(sent) >= 2), 20_000, 'replayed events');
  });
});

/** The states of a webhook's deliveries with their attempts, e.g. 'delivered:3'. */
async function deliveryStates(webhookId: number): Promise<string> {
  const rows = await service.probe.all<{ state: string; attempts: number }>(
    'SELECT state, attempts FROM webhook_deliveries WHERE webhook_id = ? ORDER BY delivery_id',
    webhookId,
  );
  return rows.map((r) => `${r.state}:${r.attempts}`).join(',');
}
