// A caller of the order API for tests and benches: the client package's OrdersClient (client/src) signs and
// sends each request once, and the answer comes back as it came, whatever its status (no retry, headers as a
// plain record, a body given as an object sent as JSON), so that a test asserts what the service answered.
import crypto from 'node:crypto';
import { OrdersClient, sha256Hex, signRequest } from '../../client/src/index.js';
import type {
  ErrorResponse,
  OrderRequest,
  OrderResponse,
  OrderSearchParams,
  OrderSearchResponse,
} from '../../client/src/index.js';

export type { OrderResponse };

/** Query parameters of `GET /v1/orders` (docs/api.md), one page: `next` is the caller's to give. */
export type SearchParams = OrderSearchParams & { next?: string | number };

export interface SigningClientOptions {
  /** Where the service is reached, e.g. `http://127.0.0.1:3000`; a trailing `/v1` ({base_url}) is accepted. */
  baseUrl: string;
  accessKey: string;
  secretKey: string;
  fetch?: typeof fetch;
}

export interface RequestOptions {
  /** `Svc-RequestId`; a fresh UUID when absent. Reuse it to retry a POST safely. */
  requestId?: string;
  /** Extra headers; the four `Svc-` headers are always the client's own. */
  headers?: Record<string, string>;
}

export interface SignedResponse<T = unknown> {
  status: number;
  ok: boolean;
  /** Lower-case header names. */
  headers: Record<string, string>;
  /** The `Svc-Status` codes, ascending; empty when the header is absent. */
  svcStatus: number[];
  /** The `Svc-RequestId` that was sent. */
  requestId: string;
  /** Parsed JSON when the response is JSON, else the text; on failure an ErrorResponse as the contract says. */
  body: T;
}

/** A body sent as is (string or bytes) or, for anything else, as JSON. */
export type RequestBody = string | Uint8Array | object;

export type SigningClient = ReturnType<typeof createSigningClient>;

/** No bound of its own on an answer, as fetch alone has none: a test's own time-out bounds it. */
const NO_TIMEOUT_MS = 10 * 60_000;

/** A client of the order endpoints whose every request is signed by the client package, sent once. */
export function createSigningClient(options: SigningClientOptions) {
  const client = new OrdersClient({ ...options, maxRetries: 0, timeoutMs: NO_TIMEOUT_MS });

  /** Sends one signed request; `pathWithQuery` starts at the service root, e.g. `/v1/orders?limit=5`. */
  async function request<T = unknown>(
    method: string,
    pathWithQuery: string,
    body?: RequestBody,
    requestOptions: RequestOptions = {},
  ): Promise<SignedResponse<T>> {
    const sent = body === undefined || typeof body === 'string' || body instanceof Uint8Array;
    const answer = await client.request<T>(
      method,
      pathWithQuery,
      sent ? body : JSON.stringify(body),
      requestOptions,
    );
    return {
      status: answer.httpStatus,
      ok: answer.httpStatus >= 200 && answer.httpStatus < 300,
      headers: Object.fromEntries(answer.headers.entries()),
      svcStatus: answer.svcStatus,
      requestId: answer.requestId,
      body: answer.body,
    };
  }

  return {
    request,
    /** `POST /v1/orders`; `respondAsync` asks for the answer before the order is processed. */
    placeOrder(order: OrderRequest, opts: RequestOptions & { respondAsync?: boolean } = {}) {
      const { respondAsync, ...rest } = opts;
      const headers = respondAsync ? { ...rest.headers, prefer: 'respond-async' } : rest.headers;
      return request<OrderResponse | ErrorResponse>('POST', '/v1/orders', order, { ...rest, headers });
    },
    getOrder(orderId: number | string, opts?: RequestOptions) {
      return request<OrderResponse | ErrorResponse>(
        'GET',
        `/v1/orders/${encodeURIComponent(orderId)}`,
        undefined,
        opts,
      );
    },
    searchOrders(params: SearchParams = {}, opts?: RequestOptions) {
      const query = searchQuery(params);
      const path = query ? `/v1/orders?${query}` : '/v1/orders';
      return request<OrderSearchResponse | ErrorResponse>('GET', path, undefined, opts);
    },
  };
}

/** The query string of a search: one pair per array element, undefined values left out. */
export function searchQuery(params: SearchParams): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params) as [string, unknown][]) {
    const values: unknown[] = Array.isArray(value) ? value : [value];
    for (const v of values) if (v !== undefined && v !== null) query.append(name, String(v));
  }
  return query.toString();
}

/**
 * The headers that sign one request as the client package signs it (content type included when it has a body),
 * dated now: for requests sent by other means than this client, e.g. node:http in a benchmark's load generator,
 * whose fetch would cost CPU on the cores the service shares with it.
 */
export function signedHeaders(
  keys: { accessKey: string; secretKey: string },
  method: string,
  path: string,
  body: string | undefined,
  requestId: string = crypto.randomUUID(),
  rawQuery = '',
): Record<string, string> {
  const date = new Date().toISOString();
  const bodySha256 = sha256Hex(body ?? '');
  return {
    ...(body ? { 'content-type': 'application/json' } : {}),
    'svc-requestid': requestId,
    'svc-access-key': keys.accessKey,
    'svc-date': date,
    'svc-signature': signRequest(keys.secretKey, { method, path, rawQuery, date, requestId, bodySha256 }),
  };
}
