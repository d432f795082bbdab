// Checking a webhook delivery (docs/api.md#webhooks): Svc-Signature is the hex HMAC-SHA256, keyed by the
// webhook's secret, of `Svc-Date + "\n" + Svc-Event-Id + "\n" + hex SHA-256 of the body bytes`.
import crypto from 'node:crypto';
import { WebhookVerificationError } from './errors.js';
import { sameSignature, sha256Hex } from './signing.js';
import type { WebhookEvent } from './types.js';

/** Headers as `node:http` gives them (lower-case names), as a plain object, or a fetch `Headers`. */
export type WebhookHeaders =
  { get(name: string): string | null } | Record<string, string | readonly string[] | undefined>;

export interface VerifyWebhookOptions {
  /**
   * How far `Svc-Date` may be from now, in seconds (default 300): an older delivery is refused as a replay. Not a
   * finite number of 0 or more: RangeError.
   */
  toleranceS?: number;
  /** The current time in ms (default Date.now()). */
  now?: number;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function')
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const record = headers as Record<string, string | readonly string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : (value as string | undefined);
}

/** The signature a delivery with these parts carries. */
export function webhookSignature(
  secret: string,
  date: string,
  eventId: string,
  rawBody: string | Uint8Array,
) {
  return crypto
    .createHmac('sha256', secret)
    .update(`${date}\n${eventId}\n${sha256Hex(rawBody)}`)
    .digest('hex');
}

/**
 * Verifies a delivery and returns its event: `rawBody` must be the bytes as received (not JSON parsed and
 * written again). `secret` may be a list: while a webhook's secret is rolled, pass the new one and the previous
 * one, and a delivery signed by either passes. Throws WebhookVerificationError when a header is missing, the
 * signature matches none of the secrets (each checked in constant time), `Svc-Date` is further than `toleranceS`
 * from now, or the body is not the event it signs.
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string | readonly string[],
  { toleranceS = 300, now = Date.now() }: VerifyWebhookOptions = {},
): WebhookEvent {
  // NaN would accept any age (every comparison with it is false): a replay of any delivery would pass.
  if (typeof toleranceS !== 'number' || !Number.isFinite(toleranceS) || toleranceS < 0)
    throw new RangeError(
      `toleranceS must be a finite number of seconds, 0 or more; got ${String(toleranceS)}`,
    );
  if (typeof now !== 'number' || !Number.isFinite(now))
    throw new RangeError(`now must be a finite time in ms; got ${String(now)}`);
  const signature = header(headers, 'svc-signature');
  const date = header(headers, 'svc-date');
  const eventId = header(headers, 'svc-event-id');
  if (!signature || !date || !eventId)
    throw new WebhookVerificationError('Svc-Signature, Svc-Date and Svc-Event-Id are all required');
  const secrets = typeof secret === 'string' ? [secret] : secret;
  if (secrets.length === 0 || secrets.some((s) => typeof s !== 'string' || s === ''))
    throw new RangeError('secret must be a webhook secret, or a list of one or more');
  // Hex in either case is accepted; every secret is tried, so the time taken does not tell which one matched.
  const presented = signature.toLowerCase();
  const matches = secrets.map((s) => sameSignature(webhookSignature(s, date, eventId, rawBody), presented));
  if (!matches.includes(true))
    throw new WebhookVerificationError('Svc-Signature does not match the body under any of these secrets');
  const sent = Date.parse(date);
  if (Number.isNaN(sent)) throw new WebhookVerificationError(`Svc-Date is not a date: ${date}`);
  if (Math.abs(now - sent) > toleranceS * 1000)
    throw new WebhookVerificationError(`Svc-Date ${date} is more than ${toleranceS} s from now`);
  let event: WebhookEvent;
  try {
    const text = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
    event = JSON.parse(text) as WebhookEvent;
  } catch {
    throw new WebhookVerificationError('the body is not JSON');
  }
  if (event === null || typeof event !== 'object' || event.eventId !== eventId)
    throw new WebhookVerificationError('the body is not the event that Svc-Event-Id names');
  return event;
}
