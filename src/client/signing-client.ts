import crypto from 'node:crypto';
import type { z } from 'zod';
import { sign } from '../auth/signature.js';
import type { orderRequestSchema } from '../http/order-request.schema.js';
import type { ErrorResponseSchema, OrderSearchResponseSchema } from '../http/order-response.schema.js';
import type { OrderResponse } from '../services/order-view.js';

export type OrderRequestBody = z.input<ReturnType<typeof orderRequestSchema>>;
export type { OrderResponse };
export type OrderSearchResponse = z.output<typeof OrderSearchResponseSchema>;
export type ErrorResponse = z.output<typeof ErrorResponseSchema>;

/** Query parameters of `GET /v1/orders` (SPEC.md); arrays are sent as repeated parameters. */
export interface OrderSearchParams {
  dateStart?: string;
  dateEnd?: string;
  itemUpdateDateStart?: string;
  itemUpdateDateEnd?: string;
  vendorId?: string | number;
  referenceId?: string;
  orderId?: readonly (string | number)[];
  orderItemId?: readonly (string | number)[];
  sortOrder?: 'ascending' | 'descending';
  limit?: number;
  next?: string | number;
}

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
  /** `Svc-Date`; now when absent. */
  date?: string;
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

/** A client of the order endpoints that signs every request as docs/api.md#signing describes. */
export function createSigningClient(options: SigningClientOptions) {
  const base = options.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
  const fetchFn = options.fetch ?? globalThis.fetch;

  /** Sends one signed request; `pathWithQuery` starts at the service root, e.g. `/v1/orders?limit=5`. */
  async function request<T = unknown>(
    method: string,
    pathWithQuery: string,
    body?: RequestBody,
    requestOptions: RequestOptions = {},
  ): Promise<SignedResponse<T>> {
    if (!pathWithQuery.startsWith('/'))
      throw new TypeError(`path must start with '/', got '${pathWithQuery}'`);
    // Sign the path and query exactly as fetch will send them, after URL normalisation.
    const url = new URL(base + pathWithQuery);
    const bytes = body === undefined ? undefined : toBytes(body);
    const requestId = requestOptions.requestId ?? crypto.randomUUID();
    const date = requestOptions.date ?? new Date().toISOString();
    const upperMethod = method.toUpperCase();
    const signature = sign(options.secretKey, {
      method: upperMethod,
      path: url.pathname,
      rawQuery: url.search.slice(1),
      date,
      requestId,
      body: bytes,
    });
    const headers: Record<string, string> = {
      accept: 'application/json',
      ...(bytes ? { 'content-type': 'application/json' } : {}),
      ...lowerCaseKeys(requestOptions.headers ?? {}),
      'svc-access-key': options.accessKey,
      'svc-date': date,
      'svc-requestid': requestId,
      'svc-signature': signature,
    };
    const response = await fetchFn(url, { method: upperMethod, headers, body: bytes });
    return {
      status: response.status,
      ok: response.ok,
      headers: Object.fromEntries(response.headers.entries()),
      svcStatus: parseSvcStatus(response.headers.get('svc-status')),
      requestId,
      body: (await readBody(response)) as T,
    };
  }

  return {
    request,
    /** `POST /v1/orders`; `respondAsync` asks for the answer before the order is processed. */
    placeOrder(order: OrderRequestBody, opts: RequestOptions & { respondAsync?: boolean } = {}) {
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
    searchOrders(params: OrderSearchParams = {}, opts?: RequestOptions) {
      const query = searchQuery(params);
      const path = query ? `/v1/orders?${query}` : '/v1/orders';
      return request<OrderSearchResponse | ErrorResponse>('GET', path, undefined, opts);
    },
  };
}

/** The query string of a search: one pair per array element, undefined values left out. */
export function searchQuery(params: OrderSearchParams): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params) as [string, unknown][]) {
    const values: unknown[] = Array.isArray(value) ? value : [value];
    for (const v of values) if (v !== undefined && v !== null) query.append(name, String(v));
  }
  return query.toString();
}

function toBytes(body: RequestBody): Buffer<ArrayBuffer> {
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof Uint8Array) return Buffer.from(body);
  return Buffer.from(JSON.stringify(body), 'utf8');
}

function lowerCaseKeys(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}

function parseSvcStatus(header: string | null): number[] {
  if (!header) return [];
  return header
    .split(',')
    .map((code) => Number(code.trim()))
    .filter((code) => Number.isInteger(code));
}

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  if (!/\bjson\b/i.test(response.headers.get('content-type') ?? '')) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
