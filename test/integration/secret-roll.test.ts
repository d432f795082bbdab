// Rolling a client's secret and a webhook's secret with the operator CLI while the client keeps working: a new
// secret at once, the previous one accepted (or still signing) until the expiry the operator gave, then not.
import { verifyWebhook } from '../../client/src/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addWebhook } from '../../src/services/webhooks.js';
import { LISTINGS, VENDORS, orderBody } from '../helpers/fixtures.js';
import { createTestService, signed, type Credentials, type TestService } from '../helpers/test-service.js';
import { runAdmin, until } from '../helpers/wait.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const WALDEN = 2002;
// Long enough for the requests of the overlap on a busy machine, short enough to wait for its end.
const OVERLAP_S = 6;

let service: TestService;
let receiver: Receiver;

beforeAll(async () => {
  service = await createTestService({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_BASE_MS: '200' } });
  await service.importCatalog(VENDORS, LISTINGS);
  receiver = await startReceiver();
  await service.startWorker();
}, 60_000);
afterAll(async () => {
  await service?.close();
  await receiver?.close();
});

async function admin(args: string[]): Promise<Record<string, unknown>> {
  const run = await runAdmin(service.env, args);
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

/** A real order, answered once the worker settled it: its HTTP status and Svc-Status. */
async function order(creds: Pick<Credentials, 'accessKey' | 'secretKey'>, ccToken: string) {
  const body = orderBody(ccToken, { listings: [{ listingId: WALDEN, quantity: 1 }] });
  const res = await signed(service.app, creds, 'POST', '/v1/orders', body);
  return { status: res.status, svcStatus: String(res.headers['svc-status']) };
}

describe("when an operator rolls a client's secret while the client orders", () => {
  it('then both secrets are accepted until the expiry, the new one only after, and nothing in between', async () => {
    const buyer = await service.client('rolling buyer');
    const old = { accessKey: buyer.accessKey, secretKey: buyer.secretKey };
    expect(await order(old, buyer.ccToken)).toEqual({ status: 200, svcStatus: '2010' });

    const rolled = await admin([
      'client:roll-secret',
      '--access-key',
      buyer.accessKey,
      '--expires-in',
      `${OVERLAP_S}s`,
    ]);
    expect(rolled).toEqual({
      accessKey: buyer.accessKey,
      secretKey: expect.stringMatching(/^sk_[0-9a-f]{64}$/),
      previousExpiresAt: expect.any(String),
    });
    const expiresAt = Date.parse(rolled.previousExpiresAt as string);
    expect(expiresAt - Date.now()).toBeLessThanOrEqual(OVERLAP_S * 1000);
    const fresh = { accessKey: buyer.accessKey, secretKey: rolled.secretKey as string };

    // The fleet moves over: old and new side by side, the new one from the first request after the roll.
    const during: string[] = [];
    while (Date.now() < expiresAt - 2000) {
      const [a, b] = await Promise.all([order(old, buyer.ccToken), order(fresh, buyer.ccToken)]);
      during.push(a.svcStatus, b.svcStatus);
    }
    expect(during.length).toBeGreaterThanOrEqual(2);
    expect(during.filter((s) => s !== '2010')).toEqual([]);

    // After the expiry the old secret is refused as a wrong signature; the new one goes on.
    await until(async () => Date.now() > expiresAt, (OVERLAP_S + 5) * 1000, 'the expiry');
    const refused = await signed(service.app, old, 'GET', '/v1/orders?limit=1');
    expect(refused.status).toBe(401);
    expect(String(refused.headers['svc-status'])).toBe('4010, 4017');
    expect(await order(fresh, buyer.ccToken)).toEqual({ status: 200, svcStatus: '2010' });
  }, 120_000);

  it('then a roll with --expires-in 0s refuses the old secret at once, and a bad duration is a usage error', async () => {
    const buyer = await service.client('leaked buyer');
    const rolled = await admin(['client:roll-secret', '--access-key', buyer.accessKey, '--expires-in', '0s']);
    const old = await signed(service.app, buyer, 'GET', '/v1/orders?limit=1');
    expect(String(old.headers['svc-status'])).toBe('4010, 4017');
    const fresh = { accessKey: buyer.accessKey, secretKey: rolled.secretKey as string };
    expect((await signed(service.app, fresh, 'GET', '/v1/orders?limit=1')).status).toBe(200);

    const tooLong = await runAdmin(service.env, [
      'client:roll-secret',
      '--access-key',
      buyer.accessKey,
      '--expires-in',
      '8d',
    ]);
    expect(tooLong.code).toBe(2);
    expect(tooLong.stderr).toContain('--expires-in must be at most 7d');
    const unknown = await runAdmin(service.env, ['client:roll-secret', '--access-key', 'AKnope']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no client with access key AKnope');
  }, 60_000);
});

describe('when an operator disables a client and enables it again', () => {
  it('then its requests are refused 4015, then accepted again', async () => {
    const buyer = await service.client('paused buyer');
    expect(await admin(['client:disable', '--access-key', buyer.accessKey])).toEqual({
      accessKey: buyer.accessKey,
      disabled: true,
    });
    const status = async () =>
      String((await signed(service.app, buyer, 'GET', '/v1/orders?limit=1')).headers['svc-status']);
    await until(async () => (await status()) === '4010, 4015', 5000, 'refused while disabled');
    expect(await admin(['client:enable', '--access-key', buyer.accessKey])).toEqual({
      accessKey: buyer.accessKey,
      disabled: false,
    });
    await until(async () => (await status()) === '2000', 5000, 'accepted once enabled');
    expect(await order(buyer, buyer.ccToken)).toEqual({ status: 200, svcStatus: '2010' });
  }, 60_000);
});

describe("when an operator rolls a webhook's secret", () => {
  it('then deliveries are signed with the previous secret until the expiry, then with the new one', async () => {
    const buyer = await service.client('hooked buyer');
    const deps = { store: service.deps.store, allowPrivate: true, clock: Date.now };
    const added = await addWebhook(deps, buyer.clientId, receiver.url('/rolled'));
    if (added.kind !== 'added') throw new Error(added.message);
    const previous = added.webhook.secret;
    const rolled = await admin([
      'webhook:roll-secret',
      '--webhook',
      String(added.webhook.webhookId),
      '--expires-in',
      `${OVERLAP_S}s`,
    ]);
    expect(rolled).toEqual({
      webhookId: added.webhook.webhookId,
      secret: expect.stringMatching(/^whsec_/),
      previousExpiresAt: expect.any(String),
    });
    const secret = rolled.secret as string;
    expect(secret).not.toBe(previous);
    const expiresAt = Date.parse(rolled.previousExpiresAt as string);
    const at = () => receiver.received.filter((r) => r.path === '/rolled');

    expect(await order(buyer, buyer.ccToken)).toMatchObject({ svcStatus: '2010' });
    await until(() => at().length >= 1, 20_000, 'a delivery during the overlap');
    const first = at()[0]!;
    // Sent before the expiry, it is signed with the secret the receiver already has; a receiver given both passes.
    if (first.at < expiresAt - 1000) expect(receiver.verify(first, previous)).toBe(true);
    expect(verifyWebhook(first.body, first.headers, [secret, previous]).eventId).toBe(first.event.eventId);

    await until(async () => Date.now() > expiresAt, (OVERLAP_S + 5) * 1000, 'the expiry');
    const before = at().length;
    expect(await order(buyer, buyer.ccToken)).toMatchObject({ svcStatus: '2010' });
    await until(() => at().length > before, 20_000, 'a delivery after the expiry');
    const later = at()[before]!;
    expect(receiver.verify(later, secret)).toBe(true);
    expect(receiver.verify(later, previous)).toBe(false);
    expect(() => verifyWebhook(later.body, later.headers, [previous])).toThrow('does not match');
    expect(verifyWebhook(later.body, later.headers, [secret, previous]).eventId).toBe(later.event.eventId);
  }, 120_000);
});
