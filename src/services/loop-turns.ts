/**
 * The synchronous work of one request done in turns of the event loop: a turn ends once it has held the loop
 * TURN_BUDGET_MS, and the process answers other requests before the next one begins: a large batch must not
 * hold the web's loop more than a few tens of milliseconds at a time, or every other client waits behind it.
 */
export const TURN_BUDGET_MS = 10;

/** Waits for the event loop's next turn: what other requests have waiting runs first. */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * A function to call before each piece of work: it returns at once while the current turn is within its budget,
 * else it waits for the next turn (`nextTurn`) and begins a new one.
 */
export function loopTurns(
  budgetMs = TURN_BUDGET_MS,
  now: () => number = () => performance.now(),
  wait: () => Promise<void> = nextTurn,
): () => Promise<void> {
  let began = now();
  return async () => {
    if (now() - began < budgetMs) return;
    await wait();
    began = now();
  };
}
