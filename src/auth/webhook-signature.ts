import crypto from 'node:crypto';
import { sha256Hex } from './signature.js';

/** What a webhook delivery signs (docs/api.md#webhooks): its Svc-Date and Svc-Event-Id, and the body bytes. */
export interface WebhookSignedParts {
  /** The Svc-Date header, exactly as sent. */
  date: string;
  /** The Svc-Event-Id header, exactly as sent. */
  eventId: string;
  body: Buffer | string;
}

/** `Svc-Date + "\n" + Svc-Event-Id + "\n" + hex SHA-256 of the body bytes`. */
export function webhookStringToSign(parts: WebhookSignedParts): string {
  return `${parts.date}\n${parts.eventId}\n${sha256Hex(parts.body)}`;
}

/** Lower-case hex HMAC-SHA256 of the string to sign, keyed by the webhook's secret: the Svc-Signature header. */
export function signWebhook(secret: string, parts: WebhookSignedParts): string {
  return crypto.createHmac('sha256', secret).update(webhookStringToSign(parts)).digest('hex');
}
