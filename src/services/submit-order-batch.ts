import type { Logger } from '../logger.js';
import type { OrderCheck, OrderIntake, OrderRequestRead } from './order-intake.js';
import { placeOrderBatch, type PlaceOrderBatchDeps } from './place-order-batch.js';
import type { SubmitOrderResult } from './submit-order.js';
import { loopTurns } from './loop-turns.js';

export type SubmitOrderBatchDeps = PlaceOrderBatchDeps & {
  intake: Pick<OrderIntake, 'check' | 'loadCatalog'>;
};

/** One entry of a batch as the edge read it. */
export interface BatchEntryRead {
  requestId: string;
  requestHash: string;
  /** The order it holds; null when the entry is no order at all (nothing is checked). */
  request: OrderRequestRead | null;
  /** Refused by the edge whatever its check finds (its requestId): checked all the same, never placed. */
  refused: boolean;
}

/** An entry with what the service made of it; null when it has nothing to say (the edge refused the entry). */
export interface BatchEntryResult<T extends BatchEntryRead> {
  entry: T;
  result: SubmitOrderResult | null;
}

/**
 * POST /v1/order-batches (docs/api.md#batches): the listings of all entries read at once, each entry read by the
 * edge and checked in turn as a single order would be, then the checked ones placed together (place-order-batch.ts).
 * One result per entry, in request order.
 */
export async function submitOrderBatch<E, T extends BatchEntryRead>(
  deps: SubmitOrderBatchDeps,
  input: {
    clientId: number;
    entries: readonly E[];
    /** The listings the entries name, read once for all of them. */
    listingIds: readonly number[];
    /** The edge's reading of an entry, made as its turn comes. */
    read: (entry: E, index: number) => T;
    log: Logger;
    /** Called before each entry: lets other requests run once the loop has been held a while (loopTurns). */
    turn?: () => Promise<void>;
  },
): Promise<BatchEntryResult<T>[]> {
  const { clientId } = input;
  const catalog = await deps.intake.loadCatalog(input.listingIds);
  const turn = input.turn ?? loopTurns();
  const checked: { entry: T; check: OrderCheck | null }[] = [];
  // One after another, as single requests would come: the card-testing lock counts each entry in turn.
  for (const [index, raw] of input.entries.entries()) {
    // Other clients' requests are answered between turns of a large batch (each ~10 ms held, whatever its entries).
    await turn();
    const entry = input.read(raw, index);
    const check = entry.request && (await deps.intake.check(clientId, entry.request, catalog));
    checked.push({ entry, check });
  }
  const placing = checked.flatMap(({ entry, check }) =>
    check?.kind === 'checked' && !entry.refused
      ? [{ requestId: entry.requestId, requestHash: entry.requestHash, checked: check.order }]
      : [],
  );
  const placed = await placeOrderBatch(deps, { clientId, orders: placing, log: input.log });
  let next = 0;
  return checked.map(({ entry, check }) => {
    if (check === null || (check.kind === 'checked' && entry.refused)) return { entry, result: null };
    return { entry, result: check.kind === 'checked' ? placed[next++]! : check };
  });
}
