// verifyWebhook accepts what the service's webhook sender signs and nothing else.
import { describe, expect, it } from 'vitest';
import { verifyWebhook, WebhookVerificationError } from '../../../client/src/index.js';
import { signWebhook } from '../../../src/auth/webhook-signature.js';

const SECRET = 'whsec_test';
const NOW = Date.parse('2026-11-21T10:00:00.000Z');
const event = {
  eventId: 'evt_1',
  type: 'order.updated',
  createDate: '2026-11-21T09:59:59.000Z',
  sequence: 3,
  order: {},
};
const body = JSON.stringify(event);

function delivery(overrides: { date?: string; secret?: string; body?: string } = {}) {
  const date = overrides.date ?? new Date(NOW).toISOString();
  const signature = signWebhook(overrides.secret ?? SECRET, { date, eventId: event.eventId, body });
  return {
    body: overrides.body ?? body,
    headers: { 'svc-date': date, 'svc-event-id': event.eventId, 'svc-signature': signature },
  };
}

const verify = (d: ReturnType<typeof delivery>, opts = {}) =>
  verifyWebhook(d.body, d.headers, SECRET, { now: NOW, ...opts });

describe('verifyWebhook', () => {
  it.each([NaN, -1, Infinity, -Infinity, '300' as unknown as number])(
    'refuses a tolerance of %s: NaN would accept a delivery of any age',
    (toleranceS) => {
      const stale = delivery({ date: new Date(NOW - 86_400_000).toISOString() });
      expect(() => verify(stale, { toleranceS })).toThrow(RangeError);
      expect(() => verify(delivery(), { toleranceS })).toThrow(/toleranceS must be a finite number/);
    },
  );

  it("while a webhook's secret is rolled, accepts a delivery signed by any secret of the list, and no other", () => {
    const list = ['whsec_new', SECRET];
    for (const secret of list) {
      const d = delivery({ secret });
      expect(verifyWebhook(d.body, d.headers, list, { now: NOW })).toEqual(event);
    }
    const other = delivery({ secret: 'whsec_other' });
    expect(() => verifyWebhook(other.body, other.headers, list, { now: NOW })).toThrow(
      WebhookVerificationError,
    );
    expect(() => verifyWebhook(other.body, other.headers, [], { now: NOW })).toThrow(RangeError);
  });

  it('refuses a current time that is not a finite number', () => {
    expect(() => verify(delivery(), { now: NaN })).toThrow(RangeError);
  });

  it('returns the event of a delivery the service signed, from text, bytes, Headers or node headers', () => {
    const d = delivery();
    expect(verify(d)).toEqual(event);
    expect(verifyWebhook(Buffer.from(d.body), new Headers(d.headers), SECRET, { now: NOW })).toEqual(event);
    const asNode = { ...d.headers, 'svc-signature': [d.headers['svc-signature']] };
    expect(verifyWebhook(new TextEncoder().encode(d.body), asNode, SECRET, { now: NOW })).toEqual(event);
  });

  it('refuses a delivery signed with another secret', () => {
    expect(() => verify(delivery({ secret: 'whsec_other' }))).toThrow(WebhookVerificationError);
    expect(() => verify(delivery({ secret: 'whsec_other' }))).toThrow(/does not match/);
  });

  it('refuses a body changed after signing, even by one byte', () => {
    expect(() => verify(delivery({ body: body.replace('"sequence":3', '"sequence":4') }))).toThrow(
      /does not match/,
    );
    expect(() => verify(delivery({ body: `${body} ` }))).toThrow(WebhookVerificationError);
  });

  it('refuses a date older (or later) than the tolerance, and accepts one within it', () => {
    const old = new Date(NOW - 301_000).toISOString();
    expect(() => verify(delivery({ date: old }))).toThrow(/more than 300 s/);
    expect(() => verify(delivery({ date: new Date(NOW + 301_000).toISOString() }))).toThrow(
      /more than 300 s/,
    );
    expect(verify(delivery({ date: old }), { toleranceS: 600 })).toEqual(event);
    expect(verify(delivery({ date: new Date(NOW - 299_000).toISOString() }))).toEqual(event);
  });

  it('refuses missing headers, an unparsable date and a body that is not the named event', () => {
    const d = delivery();
    const { 'svc-signature': _s, ...unsigned } = d.headers;
    expect(() => verifyWebhook(d.body, unsigned, SECRET, { now: NOW })).toThrow(/required/);
    expect(() => verify(delivery({ date: 'yesterday' }))).toThrow(/not a date/);
    const other = JSON.stringify({ ...event, eventId: 'evt_2' });
    const forged = signWebhook(SECRET, { date: d.headers['svc-date'], eventId: 'evt_1', body: other });
    expect(() =>
      verifyWebhook(other, { ...d.headers, 'svc-signature': forged }, SECRET, { now: NOW }),
    ).toThrow(/not the event/);
  });
});
