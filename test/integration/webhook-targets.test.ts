import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_COMMANDS } from '../../src/cli/admin.commands.js';
import { CliError } from '../../src/cli/commands/command.js';
import { loadConfig } from '../../src/config/config.js';
import { deliverWebhook } from '../../src/services/deliver-webhook.js';
import { failOrder } from '../../src/services/process-order.js';
import { processOrder } from '../helpers/process-order.js';
import { addWebhook } from '../../src/services/webhooks.js';
import { createWebhookSender } from '../../src/webhooks/webhook-sender.js';
import type { Resolver } from '../../src/webhooks/webhook-target.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';
import { runAdmin, type CliRun } from '../helpers/wait.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

let service: TestService;
let receiver: Receiver;
let buyer: Credentials;

beforeAll(async () => {
  service = await createTestService();
  await service.importCatalog(VENDORS, LISTINGS);
  buyer = await service.client('targets buyer');
  receiver = await startReceiver();
});
afterAll(async () => {
  await service?.close();
  await receiver?.close();
});

/** The operator CLI as an operator runs it, in a process of its own. */
const admin = (args: string[], env: Record<string, string> = {}) =>
  runAdmin({ ...service.env, ...env }, args);
const json = (run: CliRun) => JSON.parse(run.stdout) as unknown;

/** The same command run in this process on the service's store: its output and the exit code it maps to. */
async function command([name, ...args]: string[], env: Record<string, string> = {}): Promise<CliRun> {
  const ctx = {
    store: () => Promise.resolve(service.deps.store),
    config: loadConfig({ ...service.env, ...env }),
    out: { note: () => undefined },
  };
  try {
    const result = await ADMIN_COMMANDS[name!]!.run(args, ctx);
    return { code: 0, stdout: JSON.stringify(result), stderr: '' };
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    return { code: error.exitCode, stdout: '', stderr: error.message };
  }
}

/** A settled order of the buyer, processed in this process: its event waits in the outbox (no worker runs). */
async function settledOrder(creds = buyer): Promise<number> {
  const body = orderBody(creds.ccToken);
  const res = await signed(service.app, creds, 'POST', '/v1/orders', body, {
    headers: { Prefer: 'respond-async' },
  });
  await processOrder({ ...service.deps, maxAttempts: 5 }, res.body.orderId as number);
  return res.body.orderId as number;
}

describe('when an operator adds a webhook whose URL reaches a private address', () => {
  it('then webhook:add refuses it with exit 1, unless WEBHOOK_ALLOW_PRIVATE=true', async () => {
    const local = `http://localhost:${receiver.port}/hooks`;
    const refusedLocal = await admin(['webhook:add', '--access-key', buyer.accessKey, '--url', local]);
    expect(refusedLocal).toMatchObject({ code: 1, stdout: '' });
    expect(refusedLocal.stderr).toMatch(
      /localhost resolves to (127\.0\.0\.1|::1), which is a loopback address/,
    );
    const refused: [string, string][] = [
      ['http://10.1.2.3/hooks', 'private'],
      ['https://169.254.169.254/latest', 'link-local'],
      ['http://[::ffff:127.0.0.1]/', 'loopback'],
      // Teredo: the client's address inverted in the last 32 bits, here 127.0.0.1.
      ['http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/', 'loopback'],
      ['http://0.0.0.0:8080/', 'unspecified'],
      ['http://100.64.0.7/', 'shared (CGNAT)'],
      ['ftp://example.com/', 'must be https:// or http://'],
      ['https://user:pw@example.com/', 'credentials'],
    ];
    const runs = await Promise.all(
      refused.map(([url]) => command(['webhook:add', '--access-key', buyer.accessKey, '--url', url])),
    );
    runs.forEach((run, i) => {
      expect({ url: refused[i]![0], code: run.code, stdout: run.stdout }).toEqual({
        url: refused[i]![0],
        code: 1,
        stdout: '',
      });
      expect(run.stderr).toContain(refused[i]![1]);
    });

    const allowed = await admin(['webhook:add', '--access-key', buyer.accessKey, '--url', receiver.url()], {
      WEBHOOK_ALLOW_PRIVATE: 'true',
    });
    expect(allowed.code).toBe(0);
    const added = json(allowed) as { webhookId: number; url: string; secret: string };
    expect(Object.keys(added)).toEqual(['webhookId', 'url', 'secret']);
    expect(added).toMatchObject({
      url: receiver.url(),
      secret: expect.stringMatching(/^whsec_[0-9a-f]{64}$/),
    });
    expect(await service.deps.store.webhooks.list(buyer.clientId)).toHaveLength(1);
    await service.deps.store.webhooks.remove(added.webhookId, Date.now());
  });
});

describe('when a webhook name resolves to a private address at delivery time', () => {
  it('then the delivery is refused before anything is sent, and connects to the checked address only', async () => {
    let answer = '93.184.216.34';
    const resolve: Resolver = async () => [{ address: answer, family: 4 }];
    const url = `http://hooks.example.test:${receiver.port}/rebind`;
    const added = await addWebhook(
      { store: service.deps.store, allowPrivate: false, resolve, clock: Date.now },
      buyer.clientId,
      url,
    );
    expect(added.kind).toBe('added');
    await settledOrder();
    const deliveryId = await service.probe.scalar(
      `SELECT delivery_id FROM webhook_deliveries WHERE state = 'pending' ORDER BY delivery_id DESC`,
    );

    answer = '127.0.0.1';
    // What the worker logs, as an operator reads it: the refusal is a warning, naming the URL.
    const lines: { level: number; msg: string; url?: string }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const deps = (allowPrivate: boolean) => ({
      store: service.deps.store,
      sender: createWebhookSender({ allowPrivate, timeoutMs: 2000, resolve }),
      clock: Date.now,
      logger,
      config: service.config,
    });
    expect(await deliverWebhook(deps(false), deliveryId, 1)).toBe('retry');
    expect(receiver.received.filter((r) => r.path === '/rebind')).toHaveLength(0);
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 40, msg: 'webhook target refused; nothing sent', url }),
    );
    const error = await service.probe.scalar<string>(
      'SELECT last_error FROM webhook_deliveries WHERE delivery_id = ?',
      deliveryId,
    );
    expect(error).toContain('hooks.example.test resolves to 127.0.0.1, which is a loopback address');

    // Allowed, the same name reaches the receiver through the address it was resolved to, named in Host.
    expect(await deliverWebhook(deps(true), deliveryId, 2)).toBe('delivered');
    const [post] = receiver.received.filter((r) => r.path === '/rebind');
    expect(post!.headers.host).toBe(`hooks.example.test:${receiver.port}`);
  });
});

describe("when a webhook's secret is rolled", () => {
  it("then each delivery's log lines name the version of the secret that signed it, never the secret", async () => {
    const buyer = await service.client('rolled hooks buyer');
    const added = await addWebhook(
      { store: service.deps.store, allowPrivate: true, clock: Date.now },
      buyer.clientId,
      receiver.url('/versions'),
    );
    if (added.kind !== 'added') throw new Error(added.message);
    const { webhookId } = added.webhook;
    const lines: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(line) });
    const deps = {
      store: service.deps.store,
      sender: createWebhookSender({ allowPrivate: true, timeoutMs: 2000 }),
      clock: Date.now,
      logger,
      config: service.config,
    };
    const deliverNext = async () => {
      await settledOrder(buyer);
      const deliveryId = await service.probe.scalar(
        `SELECT delivery_id FROM webhook_deliveries WHERE state = 'pending' AND webhook_id = ?
          ORDER BY delivery_id DESC`,
        webhookId,
      );
      expect(await deliverWebhook(deps, deliveryId, 1)).toBe('delivered');
      return lines
        .map((line) => JSON.parse(line) as { deliveryId?: number; secretVersion?: number })
        .filter((line) => line.deliveryId === deliveryId);
    };

    // Rolled with an overlap: deliveries are still signed with version 1, the receiver's.
    const overlapping = await service.deps.store.webhooks.rollSecret(webhookId, Date.now() + 60_000);
    expect(await deliverNext()).toEqual([
      expect.objectContaining({ msg: 'webhook delivered', secretVersion: 1 }),
    ]);
    // Rolled again with none: version 3 signs.
    const rolled = await service.deps.store.webhooks.rollSecret(webhookId, Date.now() - 1);
    expect(rolled).toMatchObject({ secretVersion: 3 });
    expect(await deliverNext()).toEqual([
      expect.objectContaining({ msg: 'webhook delivered', secretVersion: 3 }),
    ]);
    for (const secret of [added.webhook.secret, overlapping!.secret, rolled!.secret])
      expect(lines.filter((line) => line.includes(secret.slice(6, 14)))).toEqual([]);
  });
});

describe('when an order is given up on', () => {
  it('then its FAILED items are one event, as GET shows the order', async () => {
    const body = orderBody(buyer.ccToken);
    const res = await signed(service.app, buyer, 'POST', '/v1/orders', body, {
      headers: { Prefer: 'respond-async' },
    });
    const orderId = res.body.orderId as number;
    expect(await failOrder(service.deps, orderId)).toBe('failed');
    const events = await service.probe.all<{ sequence: number; event_id: string }>(
      'SELECT sequence, event_id FROM order_events WHERE order_id = ?',
      orderId,
    );
    expect(events).toEqual([{ sequence: 1, event_id: expect.stringMatching(/^evt_/) }]);
    const got = await signed(service.app, buyer, 'GET', `/v1/orders/${orderId}`);
    expect(got.body.listings[0].orderItems[0].status).toBe(60);
  });
});

describe('when an operator manages webhooks', () => {
  it('then list, remove and replay print what docs/api.md#webhooks says', async () => {
    const client = await service.client('managed');
    const allow = { WEBHOOK_ALLOW_PRIVATE: 'true' };
    const first = json(
      await admin(['webhook:add', '--access-key', client.accessKey, '--url', receiver.url('/a')], allow),
    ) as { webhookId: number };
    const second = json(
      await command(['webhook:add', '--access-key', client.accessKey, '--url', receiver.url('/b')], allow),
    ) as { webhookId: number };

    const removed = await admin(['webhook:remove', '--webhook', String(first.webhookId)]);
    expect(removed.code).toBe(0);
    expect(json(removed)).toEqual({ webhookId: first.webhookId, active: false });
    const listed = await admin(['webhook:list', '--access-key', client.accessKey]);
    expect(json(listed)).toEqual([
      { webhookId: first.webhookId, url: receiver.url('/a'), active: false, failing: false },
      { webhookId: second.webhookId, url: receiver.url('/b'), active: true, failing: false },
    ]);

    const since = new Date().toISOString();
    await settledOrder(client);
    await settledOrder(client);
    const replayed = await admin(['webhook:replay', '--webhook', String(second.webhookId), '--since', since]);
    expect(replayed.code).toBe(0);
    expect(json(replayed)).toEqual({ replayed: 2 });
    const later = await command([
      'webhook:replay',
      '--webhook',
      String(second.webhookId),
      '--since',
      '2999-01-01',
    ]);
    expect(json(later)).toEqual({ replayed: 0 });
  });

  it('then unknown webhooks and keys exit 1 and malformed options exit 2', async () => {
    const cases: [string[], number, string][] = [
      [['webhook:remove', '--webhook', '999999'], 1, 'no webhook 999999'],
      [['webhook:replay', '--webhook', '999999', '--since', '2026-01-01'], 1, 'no webhook 999999'],
      [['webhook:list', '--access-key', 'AKnope'], 1, 'no client with access key AKnope'],
      [['webhook:add', '--access-key', 'AKnope', '--url', 'https://example.com/'], 1, 'no client'],
      [['webhook:replay', '--webhook', '1', '--since', 'yesterday'], 2, '--since must be an ISO 8601 time'],
      [['webhook:add', '--access-key', buyer.accessKey], 2, 'missing --url'],
      [['webhook:remove', '--webhook', 'x'], 2, '--webhook must be an integer greater than 0'],
    ];
    const runs = await Promise.all(cases.map(([args]) => command(args)));
    runs.forEach((run, i) => {
      const [args, code, message] = cases[i]!;
      expect({ args, code: run.code, stdout: run.stdout }).toEqual({ args, code, stdout: '' });
      expect(run.stderr).toContain(message);
    });
  });
});
