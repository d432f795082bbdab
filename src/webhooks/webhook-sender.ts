import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { signWebhook } from '../auth/webhook-signature.js';
import { forbiddenRange } from '../domain/ip-ranges.js';
import {
  fixedLookup,
  hostOf,
  parseWebhookUrl,
  resolveTarget,
  systemResolver,
  WebhookTargetError,
  type ResolvedAddress,
  type Resolver,
} from './webhook-target.js';

export interface WebhookPost {
  url: string;
  secret: string;
  eventId: string;
  /** The Svc-Date header: ISO 8601 UTC. */
  date: string;
  body: string;
  /** Asked right before the request starts (after the host is resolved): false, and nothing is sent. */
  mayStart?: () => boolean;
}

/**
 * ok: a 2xx answer in time. Anything else says what happened, for the delivery's last error; refused: nothing
 * was sent because the target is not allowed (a private address while WEBHOOK_ALLOW_PRIVATE is off), which no
 * retry mends.
 */
export type PostResult = { ok: true; status: number } | { ok: false; error: string; refused?: true };

export interface WebhookSender {
  post(request: WebhookPost): Promise<PostResult>;
  /** Closes the idle kept-alive connections. */
  close(): void;
}

export interface SenderOptions {
  allowPrivate: boolean;
  /** The whole attempt, connection included: at most this long until the answer's status. */
  timeoutMs: number;
  /** How long the connection may take: a receiver that does not accept is given up on sooner. */
  connectTimeoutMs?: number;
  resolve?: Resolver;
  /** How much of an answer is read before the connection is dropped. */
  maxResponseBytes?: number;
}

const USER_AGENT = 'bookorders-webhooks/1';

const refusedResult = (err: WebhookTargetError): PostResult => ({
  ok: false,
  error: `refused: ${err.message}`,
  refused: true,
});

/**
 * Posts signed events. Each post resolves the host once, refuses it unless every address is allowed, connects
 * only to those addresses (with the name as Host and TLS server name), checks the address it connected to
 * again, follows no redirect, reads at most `maxResponseBytes` of the answer, and gives up after `timeoutMs`
 * (or after `connectTimeoutMs` when the connection is not made by then).
 */
export function createWebhookSender(options: SenderOptions): WebhookSender {
  const resolve = options.resolve ?? systemResolver;
  const agents = {
    http: new http.Agent({ keepAlive: true, maxSockets: 64 }),
    https: new https.Agent({ keepAlive: true, maxSockets: 64 }),
  };
  return {
    async post(request) {
      let url: URL;
      let addresses: ResolvedAddress[];
      try {
        url = parseWebhookUrl(request.url);
        addresses = await resolveTarget(hostOf(url), { allowPrivate: options.allowPrivate, resolve });
      } catch (err) {
        if (err instanceof WebhookTargetError) return refusedResult(err);
        throw err;
      }
      if (request.mayStart && !request.mayStart())
        return { ok: false, error: 'not sent: the attempt was claimed too long ago' };
      const body = Buffer.from(request.body, 'utf8');
      const headers = {
        'content-type': 'application/json',
        'content-length': String(body.length),
        'user-agent': USER_AGENT,
        'svc-event-id': request.eventId,
        'svc-date': request.date,
        'svc-signature': signWebhook(request.secret, { date: request.date, eventId: request.eventId, body }),
      };
      const agent = url.protocol === 'https:' ? agents.https : agents.http;
      // Whatever goes wrong with one post is that attempt's failure, counted like a receiver's.
      return send(url, { headers, agent, lookup: fixedLookup(addresses) }, body, options).catch(
        (err: unknown): PostResult => ({ ok: false, error: (err as Error).message }),
      );
    },
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

function send(
  url: URL,
  requestOptions: Pick<http.RequestOptions, 'headers' | 'agent' | 'lookup'>,
  body: Buffer,
  { timeoutMs, connectTimeoutMs, allowPrivate, maxResponseBytes = 64 * 1024 }: SenderOptions,
): Promise<PostResult> {
  return new Promise((resolve) => {
    const transport = url.protocol === 'https:' ? https : http;
    const request = transport.request(url, { ...requestOptions, method: 'POST' });
    // Also ends an answer that trickles in after its status: the connection is then dropped.
    const timer = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    request.on('close', () => clearTimeout(timer));
    const finish = resolve;
    if (connectTimeoutMs !== undefined && connectTimeoutMs < timeoutMs)
      request.on('socket', (socket) => limitConnect(socket, request, connectTimeoutMs));
    if (!allowPrivate) request.on('socket', (socket) => checkPeer(socket, request));
    request.on('error', (err) =>
      finish(err instanceof WebhookTargetError ? refusedResult(err) : { ok: false, error: err.message }),
    );
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      // The answer counts from its status line; the rest is read (bounded) only to keep the connection reusable.
      finish(
        status >= 200 && status < 300 ? { ok: true, status } : { ok: false, error: `answered ${status}` },
      );
      drain(response, maxResponseBytes);
    });
    request.end(body);
  });
}

/** Reads an answer to its end, or drops the connection once it is longer than `limit` bytes. */
function drain(response: http.IncomingMessage, limit: number): void {
  let read = 0;
  response.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read > limit) response.destroy();
  });
  response.on('error', () => undefined);
}

/** A new connection not made within `ms` ends the request; a kept-alive one is already made. */
function limitConnect(socket: Socket, request: http.ClientRequest, ms: number): void {
  if (!socket.connecting) return;
  const timer = setTimeout(() => request.destroy(new Error(`no connection within ${ms} ms`)), ms);
  socket.once('connect', () => clearTimeout(timer));
  socket.once('close', () => clearTimeout(timer));
}

/** The address a new connection reached must be allowed too, whatever resolved it. */
function checkPeer(socket: Socket, request: http.ClientRequest): void {
  const check = () => {
    const peer = socket.remoteAddress;
    const range = peer === undefined ? 'unknown' : forbiddenRange(peer);
    if (range !== null) request.destroy(new WebhookTargetError(`connected to ${peer}, a ${range} address`));
  };
  if (socket.remoteAddress !== undefined && !socket.connecting) check();
  else socket.once('connect', check);
}
