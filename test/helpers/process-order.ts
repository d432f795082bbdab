import {
  attemptOrder,
  type ProcessOrderDeps,
  type ProcessOutcome,
} from '../../src/services/process-order.js';

/** One attempt at an order as a worker makes it, in the test's own process: its outcome alone. */
export async function processOrder(deps: ProcessOrderDeps, orderId: number): Promise<ProcessOutcome> {
  return (await attemptOrder(deps, orderId)).outcome;
}
