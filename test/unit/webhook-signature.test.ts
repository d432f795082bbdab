import { describe, expect, it } from 'vitest';
import { signWebhook, webhookStringToSign } from '../../src/auth/webhook-signature.js';
import { webhookSignatureMatches } from '../helpers/webhook-receiver.js';

const parts = {
  date: '2026-11-21T10:00:00.123Z',
  eventId: 'evt_0123',
  body: '{"eventId":"evt_0123","type":"order.updated"}',
};
// Computed with openssl: printf '%s\n%s\n%s' DATE EVENT_ID "$(printf '%s' BODY | sha256)" | openssl dgst -sha256 -hmac whsec_test
const EXPECTED = 'a0448282cbdbde308f05760041607dd38209ce00893274664329460346fedef7';

describe('webhook signatures (docs/api.md#webhooks)', () => {
  it('sign Svc-Date, Svc-Event-Id and the hex SHA-256 of the body, one per line', () => {
    expect(webhookStringToSign(parts)).toBe(
      '2026-11-21T10:00:00.123Z\nevt_0123\n934bdc823a0a6435224cb76fa98695a8fa2574bc63db53ce0feda568471a9909',
    );
    expect(signWebhook('whsec_test', parts)).toBe(EXPECTED);
    expect(signWebhook('whsec_test', { ...parts, body: Buffer.from(parts.body) })).toBe(EXPECTED);
  });

  it("are checked by a receiver (the tests' own, test/helpers/webhook-receiver.ts): any change of secret, date, id or body fails", () => {
    expect(webhookSignatureMatches('whsec_test', parts, EXPECTED)).toBe(true);
    expect(webhookSignatureMatches('whsec_test', parts, EXPECTED.toUpperCase())).toBe(true);
    expect(webhookSignatureMatches('whsec_other', parts, EXPECTED)).toBe(false);
    expect(
      webhookSignatureMatches('whsec_test', { ...parts, date: '2026-11-21T10:00:01.123Z' }, EXPECTED),
    ).toBe(false);
    expect(webhookSignatureMatches('whsec_test', { ...parts, eventId: 'evt_0124' }, EXPECTED)).toBe(false);
    expect(webhookSignatureMatches('whsec_test', { ...parts, body: `${parts.body} ` }, EXPECTED)).toBe(false);
    expect(webhookSignatureMatches('whsec_test', parts, EXPECTED.slice(1))).toBe(false);
    expect(webhookSignatureMatches('whsec_test', parts, '')).toBe(false);
  });
});
