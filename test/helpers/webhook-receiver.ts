// A real HTTP receiver of webhook deliveries on 127.0.0.1, for tests: it records every request and answers as
// the test says (a status, at once or late, or never), and checks signatures as a client's receiver would.
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sameSignature } from '../../src/auth/signature.js';
import { signWebhook, type WebhookSignedParts } from '../../src/auth/webhook-signature.js';
import type { OrderEventBody } from '../../src/services/order-events.js';

/** A receiver's check, in constant time, as a client's receiver would make it: whether `presented` signs these parts. */
export function webhookSignatureMatches(
  secret: string,
  parts: WebhookSignedParts,
  presented: string,
): boolean {
  return sameSignature(signWebhook(secret, parts), presented.toLowerCase());
}

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  event: OrderEventBody;
  at: number;
  /** What the receiver answered: a status, a status given late, or 'hang'. */
  answered?: Reply;
}

/** A status code, the same given `afterMs` after the request has arrived, or 'hang' to leave it unanswered. */
export type Reply = number | { status: number; afterMs: number } | 'hang';

/** What to answer the n-th request (0-based). */
export type Answer = (received: Received, n: number) => Reply;

export interface Receiver {
  readonly port: number;
  url(path?: string): string;
  /** Every request so far, in arrival order. */
  readonly received: Received[];
  /** Requests under way now (a hung one until its caller gives up), and the most there were at once. */
  readonly open: number;
  readonly maxOpen: number;
  answer(with_: Answer): void;
  /** Whether a request carries a valid signature of its body under `secret`. */
  verify(received: Received, secret: string): boolean;
  close(): Promise<void>;
}

export async function startReceiver(answer: Answer = () => 204): Promise<Receiver> {
  const received: Received[] = [];
  let current = answer;
  let open = 0;
  let maxOpen = 0;
  const server = http.createServer((req, res) => {
    open += 1;
    maxOpen = Math.max(maxOpen, open);
    res.on('close', () => (open -= 1));
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const entry: Received = {
        path: req.url ?? '',
        headers: req.headers,
        body,
        event: JSON.parse(body) as OrderEventBody,
        at: Date.now(),
      };
      received.push(entry);
      const reply = current(entry, received.length - 1);
      entry.answered = reply;
      if (typeof reply === 'number') res.writeHead(reply).end();
      else if (reply !== 'hang') setTimeout(() => res.writeHead(reply.status).end(), reply.afterMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: (path = '/hooks') => `http://127.0.0.1:${port}${path}`,
    received,
    get open() {
      return open;
    },
    get maxOpen() {
      return maxOpen;
    },
    answer(next) {
      current = next;
    },
    verify(entry, secret) {
      const date = String(entry.headers['svc-date']);
      const eventId = String(entry.headers['svc-event-id']);
      const signature = String(entry.headers['svc-signature']);
      return webhookSignatureMatches(secret, { date, eventId, body: entry.body }, signature);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
