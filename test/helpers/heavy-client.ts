// The heavy client (heavy-orders.ts) for a test service's client.
import { storeHeavyOrders, type HeavyOrders } from './heavy-orders.js';
import { US_ADDRESS } from './fixtures.js';
import type { Credentials, TestService } from './test-service.js';

/** Stores `h.orders` orders of `h.items` items each for `creds`'s client, with its card, shipped to the US. */
export async function storeHeavyClient(
  service: TestService,
  creds: Credentials,
  h: Pick<HeavyOrders, 'listing' | 't0' | 'orders' | 'items'>,
): Promise<void> {
  await storeHeavyOrders(service.deps.store, (sql) => service.probe.exec(sql), {
    ...h,
    clientId: creds.clientId,
    cardId: (await service.deps.store.clients.findCard(creds.ccToken))!.cardId,
    address: US_ADDRESS,
  });
}
