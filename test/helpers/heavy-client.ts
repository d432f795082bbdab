// The heavy client (heavy-orders.ts) for a test service's client.
import { storeHeavyOrders, type HeavyOrders } from './heavy-orders.js';
import { freePort } from '../../scripts/redis.js';
import { LISTINGS, US_ADDRESS, VENDORS } from './fixtures.js';
import { createSigningClient, type SigningClient } from './signed-client.js';
import { createTestService, stopChild, type Credentials, type TestService } from './test-service.js';

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

/**
 * A test service whose client `heavy` has the orders of `h` and beside it `other`, with a web process of its own
 * (on `webEnv`), stopped by `stop()`. Backpressure, which counts items, is set out of the way: it would refuse
 * most of the heavy client's work past its share (test/integration/backpressure.test.ts shows that).
 */
export async function heavyClientWeb(
  h: Pick<HeavyOrders, 'listing' | 't0' | 'orders' | 'items'>,
  webEnv: Record<string, string> = {},
) {
  const service = await createTestService({
    env: { MAX_UNSETTLED_ORDERS: '10000000', MAX_UNSETTLED_PER_CLIENT: '10000000' },
  });
  await service.importCatalog(VENDORS, LISTINGS);
  const heavy = await service.client('heavy searcher');
  const other = await service.client('another client');
  await storeHeavyClient(service, heavy, h);
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const web = await service.spawn('src/server.ts', { PORT: String(port), ...webEnv }, 'web listening');
  return {
    service,
    web,
    baseUrl,
    heavy,
    other,
    clientOf: (creds: Credentials): SigningClient => createSigningClient({ baseUrl, ...creds }),
    async stop() {
      await stopChild(web);
      await service.close({ checkMoney: false });
    },
  };
}
