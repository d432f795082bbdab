// A removed webhook stays removed: nothing is posted to it once webhook:remove has answered,
// whether an event for it was being recorded by a transaction still open, or an attempt was already claimed.
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { deliverWebhook, type DeliveryOutcome } from '../../src/services/deliver-webhook.js';
import { addWebhook, removeWebhook } from '../../src/services/webhooks.js';
import { recordEvent } from '../../src/store/postgres/webhooks.postgres.js';
import { openDb } from '../../src/store/sqlite/sqlite.db.js';
import { eventRecorder } from '../../src/store/sqlite/webhooks.sqlite.js';
import type { WebhookWithSecret } from '../../src/store/port/store.port.js';
import type { PostResult, WebhookPost } from '../../src/webhooks/webhook-sender.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';
import { TEST_STORE } from '../helpers/test-store.js';
import { runAdmin, sleep, until } from '../helpers/wait.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const WALDEN = 2002;

let service: TestService;
let receiver: Receiver;
let buyer: Credentials;

afterEach(async () => {
  await service?.close();
  await receiver?.close();
});

async function start(): Promise<void> {
  receiver = await startReceiver();
  service = await createTestService({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_BASE_MS: '100' } });
  await service.importCatalog(VENDORS, LISTINGS);
  buyer = await service.client('remove buyer');
}

async function webhookAt(path: string): Promise<WebhookWithSecret> {
  const deps = { store: service.deps.store, allowPrivate: true, clock: Date.now };
  const added = await addWebhook(deps, buyer.clientId, receiver.url(path));
  if (added.kind !== 'added') throw new Error(added.message);
  return added.webhook;
}

/** An accepted order, queued: no worker runs yet. */
async function acceptedOrder(): Promise<number> {
  const body = orderBody(buyer.ccToken, { listings: [{ listingId: WALDEN, quantity: 1 }] });
  const res = await signed(service.app, buyer, 'POST', '/v1/orders', body, {
    headers: { Prefer: 'respond-async' },
  });
  expect(res.status).toBe(200);
  return res.body.orderId as number;
}

/**
 * A transaction of its own, on its own connection, that records an event of the order and stays open until
 * `commit` is called: what a change of the order does while an operator removes a webhook.
 */
async function openEventTransaction(orderId: number, eventId: string): Promise<() => Promise<void>> {
  if (TEST_STORE === 'postgres') {
    const client = new pg.Client({ connectionString: service.config.DATABASE_URL });
    await client.connect();
    await client.query('BEGIN');
    await recordEvent(client, orderId, { eventId, type: 'order.updated' }, Date.now());
    return async () => {
      await client.query('COMMIT');
      await client.end();
    };
  }
  const db = openDb(service.config.DB_PATH);
  db.exec('BEGIN IMMEDIATE');
  eventRecorder(db)(orderId, { eventId, type: 'order.updated' }, Date.now());
  return async () => {
    db.exec('COMMIT');
    db.close();
  };
}

const deliveryStates = (webhookId: number) =>
  service.probe.all<{ state: string }>(
    'SELECT state FROM webhook_deliveries WHERE webhook_id = ? ORDER BY delivery_id',
    webhookId,
  );

describe('when a webhook is removed while a transaction recording an event for it is still open', () => {
  it('then once the event commits and the relay runs, the removed URL gets no request and its delivery is dropped', async () => {
    await start();
    const gone = await webhookAt('/gone');
    const kept = await webhookAt('/kept');
    const orderId = await acceptedOrder();
    const commit = await openEventTransaction(orderId, 'evt_held_open');

    const removing = runAdmin(service.env, ['webhook:remove', '--webhook', String(gone.webhookId)]);
    if (TEST_STORE === 'postgres') {
      // PostgreSQL lets the remove answer first: the event read the webhook as active in its own snapshot.
      expect(await removing).toMatchObject({ code: 0 });
    } else {
      // SQLite has one writer: the remove waits for the commit (whichever goes first, the outcome must hold).
      await sleep(1000);
    }
    await commit();
    expect((await removing).code).toBe(0);
    await service.startWorker();

    await until(
      () => receiver.received.some((r) => r.path === '/kept' && r.event.eventId === 'evt_held_open'),
      30_000,
      'the held event delivered to the webhook that stays',
    );
    await until(
      async () => (await deliveryStates(gone.webhookId)).every((d) => d.state !== 'pending'),
      30_000,
      'no delivery to the removed webhook pending',
    );
    expect(receiver.received.filter((r) => r.path === '/gone')).toEqual([]);
    const states = await deliveryStates(gone.webhookId);
    if (TEST_STORE === 'postgres') expect(states).toEqual([{ state: 'dropped' }]);
    else expect(states.every((d) => d.state === 'dropped')).toBe(true);
    // The receiver may have its request before the worker records the attempt.
    await until(
      async () => (await deliveryStates(kept.webhookId)).some((d) => d.state === 'delivered'),
      30_000,
      'the delivery to the webhook that stays recorded',
    );
  }, 90_000);
});

describe('when a webhook is removed while an attempt to it is claimed but has not started its request', () => {
  /** A sender that stops before starting its request (as a slow name lookup would) until `open` is called. */
  function gatedSender() {
    const started: WebhookPost[] = [];
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const sender = {
      async post(request: WebhookPost): Promise<PostResult> {
        entered();
        await gate;
        if (request.mayStart && !request.mayStart()) return { ok: false, error: 'not sent' };
        started.push(request);
        return { ok: true, status: 204 };
      },
    };
    return { sender, started, open, inside };
  }

  async function claimedAttempt(clock: () => number) {
    await start();
    const hook = await webhookAt('/claimed');
    const orderId = await acceptedOrder();
    const commit = await openEventTransaction(orderId, 'evt_claimed');
    await commit();
    const [{ delivery_id: deliveryId }] = (await service.probe.all<{ delivery_id: number }>(
      'SELECT delivery_id FROM webhook_deliveries WHERE webhook_id = ?',
      hook.webhookId,
    )) as [{ delivery_id: number }];
    const gated = gatedSender();
    const deps = {
      store: service.deps.store,
      sender: gated.sender,
      clock,
      logger: createLogger(service.config, 'test'),
      config: service.config,
    };
    const delivering: Promise<DeliveryOutcome> = deliverWebhook(deps, deliveryId, 1);
    await gated.inside;
    let answered = false;
    const removing = removeWebhook({ store: service.deps.store, clock }, hook.webhookId).then((removed) => {
      answered = true;
      return removed;
    });
    return { gated, delivering, removing, answered: () => answered };
  }

  it('then the remove answers only once the claim can no longer start a request, and none starts after', async () => {
    let now = Date.now();
    const { gated, delivering, removing, answered } = await claimedAttempt(() => now);
    await sleep(300);
    expect(answered()).toBe(false);
    now += 5000;
    await removing;
    gated.open();
    expect(await delivering).toBe('stale');
    expect(gated.started).toEqual([]);
  });

  it('then a request that starts while the remove waits is the last one, and the remove answers after it', async () => {
    const { gated, delivering, removing, answered } = await claimedAttempt(Date.now);
    await sleep(300);
    expect(answered()).toBe(false);
    gated.open();
    expect(await delivering).toBe('stale');
    expect(gated.started).toHaveLength(1);
    await removing;
    expect(answered()).toBe(true);
  });
});
