import { announceOrderEnd, type OrderOutcomes } from '../../src/queue/order-outcomes.js';
import type { RedisClient } from '../../src/redis/redis.js';

// A worker's word that an order's job ended, said as the order worker says it, for tests whose worker is BullMQ's
// alone.

/** Says on `connection` that the order's job ended, as the order worker does (in a pipeline, there its metrics'). */
export function announced(connection: RedisClient, prefix: string, orderId: number) {
  const pipeline = connection.pipeline();
  announceOrderEnd(pipeline, prefix, orderId);
  return pipeline.exec();
}

/**
 * Resolves once `outcomes` hears the channel (a new subscription hears nothing said before it is live): a waiter
 * for `orderId` woken by a message, said every 20 ms until it is heard.
 */
export async function untilHeard(
  outcomes: OrderOutcomes,
  connection: RedisClient,
  prefix: string,
  orderId: number,
): Promise<void> {
  let heard = false;
  const waited = outcomes.wait(orderId, 15_000, async () => false).then(() => (heard = true));
  while (!heard) {
    await announced(connection, prefix, orderId);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await waited;
}
