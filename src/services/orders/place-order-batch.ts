import { sha256Hex } from '../../auth/signature.js';
import { canonicalJson } from '../../domain/canonical-json.js';
import { parseInput, readableError } from '../../domain/readable-input.js';
import type { Logger } from '../../logger.js';
import { loopTurns } from '../loop-turns.js';
import { acceptBatch, type AcceptBatchDeps } from './accept-batch.js';
import { entryRequestIdSchema, orderBatchRootSchema } from './order-batch.schema.js';
import {
  ORDER_PROBLEMS,
  listingRefsOf,
  refusalOf,
  type OrderCheck,
  type OrderCheckResult,
  type OrderProblem,
  type OrderRefusal,
} from './order-check.js';
import type { PlaceOrderResult } from './place-order.js';

export type PlaceOrderBatchDeps = AcceptBatchDeps & { orderCheck: Pick<OrderCheck, 'check' | 'loadCatalog'> };

/** An entry's answer: its requestId as sent ('' when it sent none that is text), and its order's result. */
export interface BatchEntryResult {
  requestId: string;
  result: PlaceOrderResult;
}

/** A batch's entries, or its refusal whole: a problem of its root (its count of orders, a field beside them). */
export function readBatch(
  body: Record<string, unknown>,
): { kind: 'read'; entries: unknown[] } | OrderRefusal {
  // Not parseInput: the text of the entries is checked entry by entry (a poisoned one fails alone).
  const parsed = orderBatchRootSchema.safeParse(body, { error: readableError });
  if (parsed.success) return { kind: 'read', entries: parsed.data.orders };
  return refusalOf(parsed.error.issues.map(ORDER_PROBLEMS.batchIssue))!;
}

/** An entry as its turn read and checked it; `check` null when it is no order at all (nothing is checked). */
interface CheckedEntry {
  requestId: string;
  requestHash: string;
  /** Of its requestId: its form, or its first use earlier in the batch. Checked all the same, never placed. */
  requestIdProblems: OrderProblem[];
  check: OrderCheckResult | null;
}

/**
 * POST /v1/order-batches (docs/api.md#batches): the listings of all entries read at once, then each entry in
 * turn, as single requests would come (the card-testing lock counts each in turn): its requestId read, its
 * order checked as a single order is (order-check.ts); then the checked ones accepted together
 * (accept-batch.ts). One result per entry, in request order; an entry's requestId problems come before its
 * order's. `requestOf` names what the batch was sent to: an entry's request hash is of it and the entry's
 * canonical JSON, so the same entry sent again is the same request.
 */
export async function placeOrderBatch(
  deps: PlaceOrderBatchDeps,
  input: {
    clientId: number;
    entries: readonly unknown[];
    requestOf: string;
    log: Logger;
    /** Called before each entry: lets other requests run once the loop has been held a while (loopTurns). */
    turn?: () => Promise<void>;
  },
): Promise<BatchEntryResult[]> {
  const { clientId, entries } = input;
  const catalog = await deps.orderCheck.loadCatalog([
    ...new Set(entries.flatMap((e) => (isObject(e) ? listingRefsOf(e).map((r) => r.listingId) : []))),
  ]);
  const turn = input.turn ?? loopTurns();
  const seen = new Map<string, number>();
  const checked: CheckedEntry[] = [];
  for (const [index, entry] of entries.entries()) {
    // Other clients' requests are answered between turns of a large batch (each ~10 ms held, whatever its entries).
    await turn();
    const { requestId, problems: requestIdProblems } = entryRequestId(entry, index, seen);
    if (!isObject(entry)) {
      checked.push({ requestId, requestHash: '', requestIdProblems, check: null });
      continue;
    }
    const { requestId: _requestId, ...order } = entry;
    const requestHash = sha256Hex(`${input.requestOf}\n${canonicalJson(order)}`);
    const check = await deps.orderCheck.check(clientId, order, catalog);
    checked.push({ requestId, requestHash, requestIdProblems, check });
  }
  const placing = checked.flatMap(({ requestId, requestHash, requestIdProblems, check }) =>
    check?.kind === 'checked' && requestIdProblems.length === 0
      ? [{ requestId, requestHash, checked: check.order }]
      : [],
  );
  const placed = await acceptBatch(deps, { clientId, orders: placing, log: input.log });
  let next = 0;
  return checked.map(({ requestId, requestIdProblems, check }): BatchEntryResult => {
    if (check === null)
      return { requestId, result: { kind: 'refused', problems: [ORDER_PROBLEMS.notAnOrder] } };
    if (check.kind === 'checked' && requestIdProblems.length === 0)
      return { requestId, result: placed[next++]! };
    // Its requestId's problems, then its order's (none when the order passed its check).
    const order = check.kind === 'refused' ? check : undefined;
    return {
      requestId,
      result: refusalOf([...requestIdProblems, ...(order?.problems ?? [])], order?.retryAfterS)!,
    };
  });
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The entry's requestId as sent (text only) and what is wrong with it: its form, or its first use earlier. */
function entryRequestId(entry: unknown, index: number, seen: Map<string, number>) {
  const raw = isObject(entry) ? entry.requestId : undefined;
  const requestId = typeof raw === 'string' ? raw : '';
  const problems: OrderProblem[] = [];
  if (!isObject(entry)) return { requestId, problems };
  const parsed = parseInput(entryRequestIdSchema, raw);
  if (!parsed.success)
    problems.push(...parsed.error.issues.map((i) => ORDER_PROBLEMS.issue(i, ['requestId'])));
  else if (seen.has(requestId)) problems.push(ORDER_PROBLEMS.requestIdTwice(seen.get(requestId)!));
  else seen.set(requestId, index);
  return { requestId, problems };
}
