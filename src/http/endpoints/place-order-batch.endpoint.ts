import type { RequestHandler } from 'express';
import { sha256Hex } from '../../auth/signature.js';
import type { OrderIntake } from '../../services/order-intake.js';
import type { PlaceOrderBatchDeps } from '../../services/place-order-batch.js';
import { submitOrderBatch, type BatchEntryRead } from '../../services/submit-order-batch.js';
import type { SubmitOrderResult } from '../../services/submit-order.js';
import { canonicalJson } from '../canonical-json.js';
import { ApiError, describeIssue } from '../errors.js';
import { jsonObjectBody, type JsonLimits } from '../json-body.js';
import { json, responses } from '../openapi-responses.js';
import {
  MAX_BATCH_ORDERS,
  OrderBatchResponseSchema,
  OrderBatchResultSchema,
  entryRequestIdSchema,
  orderBatchRequestSchemas,
  orderBatchRootSchema,
  type OrderBatchResult,
} from '../order-batch.schema.js';
import { createOrderRequestReader, listingRefsOf, refusalError } from '../order-request.check.js';
import { AddressSchema, RequestedListingSchema } from '../order-request.schema.js';
import {
  ListingSummarySchema,
  OrderItemSummarySchema,
  OrderResponseSchema,
} from '../order-response.schema.js';
import { backpressureError, placedCode } from '../order-answers.js';
import { chargeMore, giveBack } from '../rate-limit.js';
import { perClientSlots } from '../batch-slots.js';
import { ORDER_COST_RULE, orderCost } from '../order-cost.js';
import { parseInput } from '../request-input.js';
import { authOf, streamOk } from '../respond.js';
import { SvcStatus, type SvcStatusCode } from '../status-codes.js';
import { readableError } from '../zod-messages.js';
import { requestIdParam, signed, type Endpoint } from './endpoint.js';

/** POST /v1/order-batches: up to 500 orders, each with its own requestId and result (docs/api.md#batches). */
export const placeOrderBatchEndpoint: Endpoint = {
  method: 'POST',
  path: '/order-batches',
  operation: {
    operationId: 'placeOrderBatch',
    summary: 'Place or dry-run up to 500 orders at once, each with its own requestId and result',
    description:
      'Real orders are answered at once with items QUEUED (as with Prefer: respond-async). A result ' +
      'holds the Svc-Status codes the order would get alone; the batch fails whole only when it is malformed.',
    tags: ['batches'],
    ...signed,
    parameters: [requestIdParam],
    requestBody: { required: true, content: json('OrderBatchRequest') },
    responses: responses({ 2004: 'batch answered, one result per order' }, 'OrderBatchResponse', [], {
      'Retry-After': {
        description:
          'Set when an order was refused for a while (5030, 4293): seconds until a retry can succeed',
        required: false,
        schema: { type: 'integer', minimum: 1 },
      },
    }),
  },
  schemas: (domains) => [
    AddressSchema,
    RequestedListingSchema,
    OrderItemSummarySchema,
    ListingSummarySchema,
    OrderResponseSchema,
    ...Object.values(orderBatchRequestSchemas(domains)),
    OrderBatchResultSchema,
    OrderBatchResponseSchema,
  ],
  handlers: (deps) => [
    perClientSlots(deps.config.BATCH_CONCURRENCY_PER_CLIENT, 'batches'),
    postOrderBatch(deps),
  ],
};

/**
 * A batch is two levels deeper than an order and holds up to 500 of them; a few listings each make ~40 values
 * an order. More than 500 entries is the batch's own 4002, found before the body is parsed.
 */
export const BATCH_JSON_LIMITS: JsonLimits = {
  maxDepth: 16,
  maxValues: 200_000,
  refuse: ({ member, entries }) =>
    member === 'orders' && entries > MAX_BATCH_ORDERS
      ? new ApiError(SvcStatus.LISTINGS_PROBLEM, `orders: must have at most ${MAX_BATCH_ORDERS} orders`)
      : undefined,
};

/** The rate-limit cost of a batch's entries (each at least 1, whatever it holds): see orderCost. */
export function batchCost(entries: readonly unknown[]): number {
  let cost = 0;
  for (const entry of entries) cost += orderCost(entry);
  return cost;
}

/** An entry that failed (its checks, or acceptance): its codes and messages, as the order would get them alone. */
type Refusal = { requestId: string; error: ApiError };

/** An entry as the edge read it: beside what the service needs, the problems the edge found in it. */
interface EntryReading extends BatchEntryRead {
  /** Of its requestId (4220): its form, or its first use earlier in the batch. */
  requestIdProblems: string[];
  /** Of its order's fields, as a single order's would be. */
  problems: [SvcStatusCode, string][];
}

/** POST /v1/order-batches (docs/api.md#batches): 2004 with one result per entry, in request order. */
export function postOrderBatch(deps: PlaceOrderBatchDeps & { intake: OrderIntake }): RequestHandler {
  const readOrderRequest = createOrderRequestReader(deps.intake.domains.keys());
  return async (req, res) => {
    const entries = batchEntries(jsonObjectBody(req, BATCH_JSON_LIMITS));
    const cost = batchCost(entries);
    await chargeMore(res, cost - 1, `this batch costs ${cost} requests (${ORDER_COST_RULE})`);
    const { clientId } = authOf(res);
    const seen = new Map<string, number>();
    const read = (entry: unknown, index: number): EntryReading => {
      const { requestId, problems: requestIdProblems } = entryRequestId(entry, index, seen);
      if (!isObject(entry))
        return { requestId, requestHash: '', request: null, refused: true, requestIdProblems, problems: [] };
      const { requestId: _requestId, ...order } = entry;
      const { request, problems } = readOrderRequest(order);
      const requestHash = sha256Hex(`${req.method}\n${req.path}\n${canonicalJson(order)}`);
      return {
        requestId,
        requestHash,
        request,
        refused: requestIdProblems.length > 0,
        requestIdProblems,
        problems,
      };
    };
    // No variable of their own for the results: a suspended handler keeps its variables, so the answers would stay
    // alive through the stream; `outcomes` alone holds them, and lets each go once written (answersOf).
    let unspent = 0;
    const outcomes = (
      await submitOrderBatch(deps, {
        clientId,
        entries,
        listingIds: [
          ...new Set(entries.flatMap((e) => (isObject(e) ? listingRefsOf(e).map((r) => r.listingId) : []))),
        ],
        read,
        log: req.log,
      })
    ).map(({ entry, result }, index) => {
      if (result?.kind === 'busy') unspent += orderCost(entries[index]);
      return outcomeOf(entry, result);
    });
    // Orders refused by backpressure stored nothing: their cost is given back, the one request paid on arrival kept.
    await giveBack(res, Math.min(unspent, cost - 1));
    const retryAfter = Math.max(
      0,
      ...outcomes.map((o) => Number(('error' in o && o.error.headers['Retry-After']) || 0)),
    );
    if (retryAfter > 0) res.set('Retry-After', String(retryAfter));
    await streamOk(res, SvcStatus.BATCH_ANSWERED, 'results', answersOf(outcomes));
  };
}

/**
 * The entries' answers in request order, each dropped from `outcomes` as it is taken to be written: a batch's
 * answers (several MB for 500 orders of 250 items) are not all kept alive while a slow reader takes them.
 */
function* answersOf(outcomes: (OrderBatchResult | Refusal | undefined)[]): Generator<OrderBatchResult> {
  for (let n = 0; n < outcomes.length; n++) {
    const outcome = outcomes[n]!;
    outcomes[n] = undefined;
    yield 'error' in outcome ? refused(outcome) : outcome;
  }
}

/** The entries of a well-formed batch; the whole batch fails on a problem of its root (4002 for its count). */
function batchEntries(body: Record<string, unknown>): unknown[] {
  // Not parseInput: the text of the entries is checked entry by entry (a poisoned one fails alone).
  const parsed = orderBatchRootSchema.safeParse(body, { error: readableError });
  if (parsed.success) return parsed.data.orders;
  const issues = parsed.error.issues;
  throw new ApiError(
    issues.map((i) => (isCountProblem(i) ? SvcStatus.LISTINGS_PROBLEM : SvcStatus.INVALID)),
    issues.map((i) => describeIssue(i)),
  );
}

const isCountProblem = (issue: { path: PropertyKey[]; code: string }): boolean =>
  issue.path.length === 1 &&
  issue.path[0] === 'orders' &&
  (issue.code === 'too_small' || issue.code === 'too_big');

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The entry's requestId as sent (text only) and what is wrong with it: its form, or its first use earlier. */
function entryRequestId(entry: unknown, index: number, seen: Map<string, number>) {
  const raw = isObject(entry) ? entry.requestId : undefined;
  const requestId = typeof raw === 'string' ? raw : '';
  const problems: string[] = [];
  if (!isObject(entry)) return { requestId, problems };
  const parsed = parseInput(entryRequestIdSchema, raw);
  if (!parsed.success) problems.push(...parsed.error.issues.map((i) => describeIssue(i, ['requestId'])));
  else if (seen.has(requestId))
    problems.push(`requestId: appears more than once in the batch (first at orders[${seen.get(requestId)}])`);
  else seen.set(requestId, index);
  return { requestId, problems };
}

function notAnOrder(): ApiError {
  return new ApiError(
    SvcStatus.MALFORMED,
    'order: must be a JSON object (an OrderRequest with its requestId)',
  );
}

/** The entry's requestId problems (4220) with those of its order. */
function merged(problems: string[], err?: ApiError): ApiError {
  const codes: SvcStatusCode[] = [SvcStatus.INVALID, ...(err?.codes ?? [])];
  return new ApiError(codes, [...problems, ...(err?.messages ?? [])], err?.headers);
}

const sortedCodes = (codes: readonly number[]): number[] => [...new Set(codes)].sort((a, b) => a - b);

function refused({ requestId, error }: Refusal): OrderBatchResult {
  return { requestId, status: sortedCodes(error.codes), order: null, messages: error.messages };
}

/**
 * An entry's answer: a placed, priced or duplicate order as its result; a refusal (by the edge, the check, a
 * conflict or backpressure) with the codes and messages the order would get alone, its requestId's first.
 */
function outcomeOf(entry: EntryReading, result: SubmitOrderResult | null): OrderBatchResult | Refusal {
  const { requestId, requestIdProblems } = entry;
  const withRequestId = (err: ApiError) => (requestIdProblems.length ? merged(requestIdProblems, err) : err);
  if (result === null)
    return { requestId, error: entry.request === null ? notAnOrder() : merged(requestIdProblems) };
  switch (result.kind) {
    case 'locked':
    case 'refused':
      return { requestId, error: withRequestId(refusalError(entry.problems, result)) };
    case 'dry-run':
      return { requestId, status: [SvcStatus.DRY_RUN_OK], order: result.order };
    case 'placed':
      return { requestId, status: [placedCode(result)], order: result.order };
    case 'conflict':
      return { requestId, error: requestIdConflict() };
    case 'busy':
      return { requestId, error: backpressureError(result) };
  }
}

const requestIdConflict = () =>
  new ApiError(
    SvcStatus.REQUEST_ID_CONFLICT,
    'requestId: already used by this access key for a different request',
  );
