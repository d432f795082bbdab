import type { RequestHandler } from 'express';
import { sha256Hex } from '../../auth/signature.js';
import type { OrderIntake } from '../../services/order-intake.js';
import {
  placeOrderBatch,
  type BatchOrder,
  type PlaceOrderBatchDeps,
} from '../../services/place-order-batch.js';
import type { PlaceOrderResult } from '../../services/place-order.js';
import { canonicalJson } from '../canonical-json.js';
import { ApiError, describeIssue } from '../errors.js';
import { jsonObjectBody, type JsonLimits } from '../json-body.js';
import {
  MAX_BATCH_ORDERS,
  entryRequestIdSchema,
  orderBatchRootSchema,
  type OrderBatchResult,
} from '../order-batch.schema.js';
import { createOrderRequestCheck, listingRefsOf } from '../order-request.check.js';
import { backpressureError, placedCode } from '../order-answers.js';
import { chargeMore } from '../rate-limit.js';
import { ORDER_COST_RULE, orderCost } from '../order-cost.js';
import { parseInput } from '../request-input.js';
import { authOf, streamOk } from '../respond.js';
import { SvcStatus, type SvcStatusCode } from '../status-codes.js';
import { readableError } from '../zod-messages.js';

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

const YIELD_EVERY = 20;

/** The rate-limit cost of a batch's entries (each at least 1, whatever it holds): see orderCost. */
export function batchCost(entries: readonly unknown[]): number {
  let cost = 0;
  for (const entry of entries) cost += orderCost(entry);
  return cost;
}

/** An entry that failed (its checks, or acceptance): its codes and messages, as the order would get them alone. */
type Refusal = { requestId: string; error: ApiError };
type Checked = { requestId: string; order: BatchOrder };

/** POST /v1/order-batches (docs/api.md#batches): 2004 with one result per entry, in request order. */
export function postOrderBatch(deps: PlaceOrderBatchDeps & { intake: OrderIntake }): RequestHandler {
  const checkOrderRequest = createOrderRequestCheck(deps.intake);
  return async (req, res) => {
    const entries = batchEntries(jsonObjectBody(req, BATCH_JSON_LIMITS));
    const cost = batchCost(entries);
    await chargeMore(res, cost - 1, `this batch costs ${cost} requests (${ORDER_COST_RULE})`);
    const { clientId } = authOf(res);
    const catalog = await deps.intake.loadCatalog([
      ...new Set(entries.flatMap((e) => (isObject(e) ? listingRefsOf(e).map((r) => r.listingId) : []))),
    ]);
    const seen = new Map<string, number>();
    const checked: (Checked | Refusal)[] = [];
    // One after another, as single requests would come: the card-testing lock counts each entry in turn.
    for (const [index, entry] of entries.entries()) {
      // Other clients' requests are answered between chunks of a large batch, not after all of it.
      if (index > 0 && index % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
      const { requestId, problems } = entryRequestId(entry, index, seen);
      const check = async (order: Record<string, unknown>) => ({
        requestId,
        requestHash: sha256Hex(`${req.method}\n${req.path}\n${canonicalJson(order)}`),
        checked: await checkOrderRequest(clientId, order, catalog),
      });
      checked.push(await checkEntry(entry, requestId, problems, check));
    }
    const orders = checked.flatMap((c) => ('order' in c ? [c.order] : []));
    const placed = await placeOrderBatch(deps, { clientId, orders, log: req.log });
    let next = 0;
    const outcomes = checked.map((c) => ('order' in c ? outcomeOf(c.requestId, placed[next++]!) : c));
    const retryAfter = Math.max(
      0,
      ...outcomes.map((o) => Number(('error' in o && o.error.headers['Retry-After']) || 0)),
    );
    if (retryAfter > 0) res.set('Retry-After', String(retryAfter));
    await streamOk(
      res,
      SvcStatus.BATCH_ANSWERED,
      'results',
      outcomes.map((o) => ('error' in o ? refused(o) : o)),
    );
  };
}

/** One entry checked as a single order would be, with its requestId problems (4220) among its own. */
async function checkEntry(
  entry: unknown,
  requestId: string,
  problems: string[],
  check: (order: Record<string, unknown>) => Promise<BatchOrder>,
): Promise<Checked | Refusal> {
  if (!isObject(entry)) return { requestId, error: notAnOrder() };
  const { requestId: _requestId, ...order } = entry;
  try {
    const checked = await check(order);
    return problems.length ? { requestId, error: merged(problems) } : { requestId, order: checked };
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return { requestId, error: problems.length ? merged(problems, err) : err };
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

/** A placed, priced or duplicate order as its result; a conflict or a refusal by backpressure as a refusal. */
function outcomeOf(requestId: string, result: PlaceOrderResult): OrderBatchResult | Refusal {
  switch (result.kind) {
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
