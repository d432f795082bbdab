import crypto from 'node:crypto';
import { OrderApiError } from './errors.js';
import { isRetryable, MAX_RETRY_AFTER_MS, retryAfterMs, retryDelayMs } from './retry.js';
import { sha256Hex, signRequest } from './signing.js';
import type {
  OrderBatchEntry,
  OrderBatchResult,
  OrderRequest,
  OrderResponse,
  OrderSearchParams,
  OrderSearchResponse,
} from './types.js';

export interface OrdersClientOptions {
  /** Where the service is reached, e.g. `https://orders.example.com`; a trailing `/v1` is accepted. */
  baseUrl: string;
  accessKey: string;
  secretKey: string;
  /** How many times a request is sent again after a retryable failure (default 3). */
  maxRetries?: number;
  /** How long one attempt may take, answer read included, before it counts as lost (default 30,000 ms). */
  timeoutMs?: number;
  /**
   * The longest `Retry-After` waited for before sending again (default 300,000 ms): an answer asking for longer
   * is not retried, it is the caller's (an OrderApiError saying so from the typed methods).
   */
  maxRetryAfterMs?: number;
  /** A fetch to use instead of the global one (Node's); it is asked never to follow a redirect. */
  fetch?: typeof globalThis.fetch;
}

export interface PlaceOrderOptions {
  /** `Svc-RequestId`: a fresh UUID when absent. Give your own to make a later call a safe retry of this one. */
  requestId?: string;
  /** Answer as soon as the order is accepted (items QUEUED) instead of waiting for the worker's outcome. */
  respondAsync?: boolean;
  signal?: AbortSignal;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export interface PlaceOrdersOptions {
  /** Batches in flight at once (default 2, the service's BATCH_CONCURRENCY_PER_CLIENT). */
  concurrency?: number;
  /** Entries per `POST /v1/order-batches` (default and most 500). */
  batchSize?: number;
  signal?: AbortSignal;
}

/** The outcome of one entry of `placeOrders`, in the entries' order. */
export interface PlaceOrdersResult {
  requestId: string;
  /** The Svc-Status codes this order got (as if sent alone): 2010 created, 2003 still processing, 2002 dry run… */
  svcStatus: number[];
  /** The order (priced for a dry run); null when it failed. */
  order: OrderResponse | null;
  /** Present when the order failed: one readable line per problem. */
  messages?: string[];
}

export interface WaitForOrderOptions {
  /** Give up after this long, rejecting with an OrderApiError (`httpStatus` 0, retryable; default 60,000 ms). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface RequestOptions {
  /** `Svc-RequestId`: a fresh UUID when absent; every retry sends the same. */
  requestId?: string | undefined;
  /** Extra headers (e.g. `Prefer`); the four `Svc-` headers are always the client's own. */
  headers?: Record<string, string> | undefined;
  /** Retries of this request (default: the client's `maxRetries`). */
  maxRetries?: number | undefined;
  signal?: AbortSignal | undefined;
}

/** An answer as it came: any status. */
export interface RawAnswer<T = unknown> {
  httpStatus: number;
  /** The `Svc-Status` codes, ascending; empty when the header is absent. */
  svcStatus: number[];
  headers: Headers;
  /** The `Svc-RequestId` that was sent. */
  requestId: string;
  /** Parsed JSON when the answer is JSON, else its text. */
  body: T;
}

const QUEUED = 1;
const MAX_BATCH = 500;

/**
 * A client of the order API: every request signed (docs/api.md#signing), retried when the failure says "later"
 * with the same Svc-RequestId and body (re-signed with a fresh Svc-Date), so a retry never doubles an order.
 */
export class OrdersClient {
  readonly #base: string;
  readonly #accessKey: string;
  readonly #key: crypto.KeyObject;
  readonly #maxRetries: number;
  readonly #timeoutMs: number;
  readonly #maxRetryAfterMs: number;
  readonly #fetch: typeof globalThis.fetch;

  constructor(options: OrdersClientOptions) {
    if (!options.baseUrl || !options.accessKey || !options.secretKey)
      throw new TypeError('OrdersClient needs baseUrl, accessKey and secretKey');
    this.#base = options.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
    this.#accessKey = options.accessKey;
    this.#key = crypto.createSecretKey(Buffer.from(options.secretKey, 'utf8'));
    this.#maxRetries = options.maxRetries ?? 3;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#maxRetryAfterMs = options.maxRetryAfterMs ?? MAX_RETRY_AFTER_MS;
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  /** `POST /v1/orders`: places the order (or dry-runs it, with `dryrun: true`) and resolves to the order. */
  async placeOrder(order: OrderRequest, options: PlaceOrderOptions = {}): Promise<OrderResponse> {
    const headers: Record<string, string> = options.respondAsync ? { prefer: 'respond-async' } : {};
    const answer = await this.#request<OrderResponse>('POST', '/v1/orders', JSON.stringify(order), {
      requestId: options.requestId,
      signal: options.signal,
      headers,
    });
    return answer.body;
  }

  /** `POST /v1/orders` with `dryrun: true`: the order checked and priced, nothing bought. */
  dryRun(order: OrderRequest, options: CallOptions = {}): Promise<OrderResponse> {
    return this.placeOrder({ ...order, dryrun: true }, options);
  }

  /** `GET /v1/orders/{orderId}`. */
  async getOrder(orderId: number | string, options: CallOptions = {}): Promise<OrderResponse> {
    const path = `/v1/orders/${encodeURIComponent(String(orderId))}`;
    return (await this.#request<OrderResponse>('GET', path, undefined, options)).body;
  }

  /**
   * Places any number of orders through `POST /v1/order-batches`, at most `batchSize` (500) a batch and
   * `concurrency` batches in flight, and answers one result per entry, in the entries' order. Entries refused
   * for a reason that passes (5030 too many orders waiting, 4291) are sent again, with their requestIds, after
   * `Retry-After`, up to `maxRetries` rounds; their last result is the one answered. A batch that fails whole
   * rejects with its OrderApiError: every entry carries its requestId, so calling again with the same entries
   * is safe (orders already placed are answered as they stand).
   */
  async placeOrders(
    entries: readonly OrderBatchEntry[],
    options: PlaceOrdersOptions = {},
  ): Promise<PlaceOrdersResult[]> {
    const batchSize = Math.min(MAX_BATCH, Math.max(1, options.batchSize ?? MAX_BATCH));
    const concurrency = Math.max(1, options.concurrency ?? 2);
    const seen = new Set<string>();
    for (const [i, entry] of entries.entries()) {
      if (typeof entry?.requestId !== 'string' || entry.requestId === '')
        throw new TypeError(`entries[${i}] needs a requestId`);
      if (seen.has(entry.requestId)) throw new TypeError(`entries[${i}]: requestId ${entry.requestId} twice`);
      seen.add(entry.requestId);
    }
    const results: PlaceOrdersResult[] = new Array(entries.length);
    const chunks: number[][] = [];
    for (let start = 0; start < entries.length; start += batchSize)
      chunks.push(Array.from({ length: Math.min(batchSize, entries.length - start) }, (_, k) => start + k));
    let failure: unknown;
    const worker = async () => {
      while (chunks.length && failure === undefined) {
        const chunk = chunks.shift()!;
        try {
          await this.#placeChunk(entries, chunk, results, options.signal);
        } catch (err) {
          failure ??= err;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, chunks.length) }, worker));
    if (failure !== undefined) throw failure;
    return results;
  }

  async #placeChunk(
    entries: readonly OrderBatchEntry[],
    indices: number[],
    results: PlaceOrdersResult[],
    signal: AbortSignal | undefined,
  ): Promise<void> {
    let pending = indices;
    for (let round = 0; pending.length; round++) {
      let answer: RawAnswer<{ results: OrderBatchResult[] }>;
      try {
        const body = JSON.stringify({ orders: pending.map((i) => entries[i]) });
        answer = await this.#request('POST', '/v1/order-batches', body, { signal });
      } catch (err) {
        // Over 1 MiB (large orders): half the entries each time fits.
        if (err instanceof OrderApiError && err.httpStatus === 413 && pending.length > 1) {
          const half = Math.ceil(pending.length / 2);
          await this.#placeChunk(entries, pending.slice(0, half), results, signal);
          await this.#placeChunk(entries, pending.slice(half), results, signal);
          return;
        }
        throw err;
      }
      const again: number[] = [];
      answer.body.results.forEach((result, k) => {
        const index = pending[k]!;
        results[index] = {
          requestId: result.requestId,
          svcStatus: result.status,
          order: result.order,
          ...(result.messages ? { messages: result.messages } : {}),
        };
        const httpStatus = Math.floor((result.status[0] ?? 0) / 10);
        if (round < this.#maxRetries && isRetryable({ httpStatus, svcStatus: result.status }))
          again.push(index);
      });
      const waitMs = retryDelayMs(round, answer.headers.get('retry-after'));
      // Asked to wait longer than this client waits: those entries keep the refusal they got.
      if (again.length && waitMs > this.#maxRetryAfterMs) return;
      if (again.length) await sleep(waitMs, signal);
      pending = again;
    }
  }

  /** Every order matching `params` (`GET /v1/orders`), page after page, following `metadata.next`. */
  async *searchOrders(
    params: OrderSearchParams = {},
    options: CallOptions = {},
  ): AsyncGenerator<OrderResponse> {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(params) as [string, unknown][]) {
      if (name === 'next') continue;
      for (const v of Array.isArray(value) ? value : [value])
        if (v !== undefined && v !== null) query.append(name, String(v));
    }
    for (;;) {
      const qs = query.toString();
      const page = await this.#request<OrderSearchResponse>(
        'GET',
        qs ? `/v1/orders?${qs}` : '/v1/orders',
        undefined,
        options,
      );
      yield* page.body.orders;
      const next = page.body.metadata.next;
      if (next === undefined) return;
      query.set('next', String(next));
    }
  }

  /**
   * Resolves to the order once none of its items is QUEUED (the worker has settled it), asking `GET` with a
   * growing pause (up to 2 s).
   */
  async waitForOrder(orderId: number | string, options: WaitForOrderOptions = {}): Promise<OrderResponse> {
    const timeoutMs = options.timeoutMs ?? 60_000;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = anySignal([timeout, options.signal]);
    try {
      for (let pauseMs = 100; ; pauseMs = Math.min(2_000, pauseMs * 2)) {
        const order = await this.getOrder(orderId, { signal });
        if (!order.listings.some((l) => l.orderItems.some((item) => item.status === QUEUED))) return order;
        await sleep(pauseMs, signal);
      }
    } catch (err) {
      // The caller's own abort stays theirs; the time-out is a failure like any other of this client.
      if (!timeout.aborted || options.signal?.aborted) throw err;
      throw new OrderApiError({
        httpStatus: 0,
        svcStatus: [],
        messages: [`order ${String(orderId)} still had QUEUED items after ${timeoutMs} ms`],
        requestId: '',
        retryable: true,
        cause: err,
      });
    }
  }

  /**
   * One signed request to any path of the API (`pathWithQuery` from the service root, e.g. `/v1/orders?limit=5`),
   * retried as the class says, resolving to the last answer whatever its status (the typed methods above reject
   * on a failure instead). Rejects with an OrderApiError (`httpStatus` 0) only when no answer came at all. A
   * redirect (3xx) is never followed: it would hand the signed headers and the body (a card token) to another
   * address; it is the answer, as is one whose `Retry-After` asks for longer than `maxRetryAfterMs`.
   * A body given as text or bytes is sent as it is, with `Content-Type: application/json` unless `headers` set one.
   */
  async request<T = unknown>(
    method: string,
    pathWithQuery: string,
    body?: string | Uint8Array,
    options: RequestOptions = {},
  ): Promise<RawAnswer<T>> {
    if (!pathWithQuery.startsWith('/'))
      throw new TypeError(`path must start with '/', got '${pathWithQuery}'`);
    const url = new URL(this.#base + pathWithQuery);
    const upper = method.toUpperCase();
    const requestId = options.requestId ?? crypto.randomUUID();
    const bodySha256 = sha256Hex(body ?? '');
    const rawQuery = url.search.slice(1);
    const extra = Object.fromEntries(
      Object.entries(options.headers ?? {}).map(([n, v]) => [n.toLowerCase(), v]),
    );
    const maxRetries = options.maxRetries ?? this.#maxRetries;
    for (let attempt = 0; ; attempt++) {
      options.signal?.throwIfAborted();
      const date = new Date().toISOString();
      const headers: Record<string, string> = {
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...extra,
        'svc-access-key': this.#accessKey,
        'svc-date': date,
        'svc-requestid': requestId,
        'svc-signature': signRequest(this.#key, {
          method: upper,
          path: url.pathname,
          rawQuery,
          date,
          requestId,
          bodySha256,
        }),
      };
      const signal = anySignal([AbortSignal.timeout(this.#timeoutMs), options.signal]);
      let answer: RawAnswer<T>;
      try {
        const response = await this.#fetch(url, {
          method: upper,
          headers,
          body: body as BodyInit | undefined,
          redirect: 'manual',
          signal,
        });
        const text = await response.text();
        answer = {
          httpStatus: response.status,
          svcStatus: parseSvcStatus(response.headers.get('svc-status')),
          headers: response.headers,
          requestId,
          body: parseBody(text, response.headers.get('content-type')) as T,
        };
      } catch (err) {
        if (options.signal?.aborted) throw options.signal.reason;
        const failure = new OrderApiError({
          httpStatus: 0,
          svcStatus: [],
          messages: [signal.aborted ? `no answer within ${this.#timeoutMs} ms` : describe(err)],
          requestId,
          retryable: true,
          cause: err,
        });
        if (attempt >= maxRetries) throw failure;
        await sleep(retryDelayMs(attempt, null), options.signal);
        continue;
      }
      if (answer.httpStatus < 300 || attempt >= maxRetries || !isRetryable(answer)) return answer;
      const waitMs = retryDelayMs(attempt, answer.headers.get('retry-after'));
      if (waitMs > this.#maxRetryAfterMs) return answer;
      await sleep(waitMs, options.signal);
    }
  }

  /** A request of the typed methods: resolves to a 2xx answer, else rejects with OrderApiError. */
  async #request<T>(
    method: string,
    pathWithQuery: string,
    body: string | undefined,
    options: RequestOptions,
  ): Promise<RawAnswer<T>> {
    const answer = await this.request<T>(method, pathWithQuery, body, options);
    if (answer.httpStatus >= 200 && answer.httpStatus < 300) return answer;
    const messages = messagesOf(answer.body, answer.httpStatus);
    if (answer.httpStatus >= 300 && answer.httpStatus < 400) {
      const to = (answer.headers.get('location') ?? '').slice(0, 200);
      messages.unshift(
        `redirected to '${to}': not followed (the signed request and its body stay with baseUrl)`,
      );
    }
    const asked = retryAfterMs(answer.headers.get('retry-after'));
    if (isRetryable(answer) && asked !== undefined && asked > this.#maxRetryAfterMs)
      messages.push(
        `Retry-After asks for more than this client waits (${this.#maxRetryAfterMs} ms): not retried`,
      );
    throw new OrderApiError({
      httpStatus: answer.httpStatus,
      svcStatus: answer.svcStatus,
      messages,
      requestId: answer.requestId,
      retryable: isRetryable(answer),
    });
  }
}

function parseSvcStatus(header: string | null): number[] {
  if (!header) return [];
  return header
    .split(',')
    .map((code) => Number(code.trim()))
    .filter((code) => Number.isInteger(code));
}

function parseBody(text: string, contentType: string | null): unknown {
  if (!/\bjson\b/i.test(contentType ?? '')) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function messagesOf(body: unknown, status: number): string[] {
  const messages = (body as { messages?: unknown } | null)?.messages;
  if (Array.isArray(messages) && messages.every((m) => typeof m === 'string'))
    return [...(messages as string[])];
  return [typeof body === 'string' && body ? body.slice(0, 300) : `HTTP ${status}`];
}

function describe(err: unknown): string {
  const cause = (err as { cause?: { message?: string; code?: string } })?.cause;
  const message = err instanceof Error ? err.message : String(err);
  return cause?.message ? `${message}: ${cause.code ? `${cause.code} ` : ''}${cause.message}` : message;
}

/** One signal aborted when any of these is (AbortSignal.any where Node has it, 20.3 on). */
function anySignal(signals: (AbortSignal | undefined)[]): AbortSignal {
  const present = signals.filter((s): s is AbortSignal => s !== undefined);
  if (present.length === 1) return present[0]!;
  const any = (AbortSignal as { any?: (signals: AbortSignal[]) => AbortSignal }).any;
  if (any) return any(present);
  const controller = new AbortController();
  for (const s of present) {
    if (s.aborted) controller.abort(s.reason);
    else s.addEventListener('abort', () => controller.abort(s.reason), { once: true });
  }
  return controller.signal;
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
