import type { RequestHandler } from 'express';
import type { z } from 'zod';
import type { Deps } from '../../deps.js';
import type { responses } from '../openapi-responses.js';

/** The methods of the signed API (HEAD is answered by GET's handlers). */
export type Method = 'GET' | 'POST';

/**
 * One way into the signed API, declared in its own module (`NAME.endpoint.ts`) and listed once in `ENDPOINTS`
 * (index.ts), which the router (app.ts), the OpenAPI document (openapi.ts) and the request metrics' route labels
 * (request-labels.ts) all read.
 */
export interface Endpoint {
  method: Method;
  /** The path after `/v1`, with :name for a parameter (`/orders/:orderId`); endpoints may share a path. */
  path: string;
  /** Its OpenAPI operation, as the document lists it under the path and method. */
  operation: Operation;
  /** The zod schemas its operation names as components (each with `.meta({ id })`), for the markets' domains. */
  schemas: (domains: readonly string[]) => z.ZodType[];
  /**
   * Its handlers, made once per app, run after the signed API's guards (authentication, rate limit, body): any
   * guard of its own, then the handler that reads the request, makes its one service call and answers.
   */
  handlers: (deps: Deps) => RequestHandler[];
  /**
   * True when its rate-limit cost is read from its body (an order, a batch): the rate limit takes nothing on
   * arrival, and its handler takes the whole cost in one take once it has read the body (chargeCost); a request
   * answered before (its body unreadable, a guard of its own) is charged one token first. Otherwise one token is
   * taken on arrival, before its handlers run (rate-limit.ts).
   */
  chargedByBody?: boolean;
}

/** An OpenAPI operation of the signed API. */
export interface Operation {
  operationId: string;
  summary: string;
  description: string;
  tags: string[];
  security: Record<string, string[]>[];
  parameters: object[];
  requestBody?: object;
  responses: ReturnType<typeof responses>;
}

/** The path as OpenAPI writes it: /orders/{orderId}. */
export const openApiPath = (path: string): string => path.replace(/:(\w+)/g, '{$1}');

/**
 * The path's pattern after `/v1` (no query), as the router matches it: a :name matches one segment, its capture
 * group named in `params`; a trailing slash is allowed.
 */
export function pathPattern(path: string): { pattern: RegExp; params: string[] } {
  const params: string[] = [];
  const segments = path.split('/').map((segment) => {
    if (!segment.startsWith(':')) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    params.push(segment.slice(1));
    return '([^/]+)';
  });
  return { pattern: new RegExp(`^${segments.join('\\/')}\\/?$`), params };
}

/** What every signed operation of the document says of its security and Svc-RequestId. */
export const signed = { security: [{ SvcAccessKey: [], SvcDate: [], SvcSignature: [] }] };
export const requestIdParam = { $ref: '#/components/parameters/SvcRequestId' };
