// A web process of its own beside a heavy client's history, and the latencies another client observes meanwhile
// (heavy-search.test.ts, read-costs.test.ts).
import type { ChildProcess } from 'node:child_process';
import { setTimeout } from 'node:timers/promises';
import { freePort } from '../../scripts/redis.js';
import { LISTINGS, VENDORS } from './fixtures.js';
import { storeHeavyClient } from './heavy-client.js';
import { createTestService, stopChild, type Credentials, type TestService } from './test-service.js';

export interface HeavyWeb {
  service: TestService;
  web: ChildProcess;
  baseUrl: string;
  heavy: Credentials;
  other: Credentials;
  close(): Promise<void>;
}

/**
 * A test service whose client `heavy` has `orders` orders of `items` items each of LISTINGS[0], created one second
 * apart from `t0`, and another client; then a web process listening on a free port. Backpressure, which counts
 * unsettled items, is lifted: the heavy history is stored unsettled, and what is measured is the web.
 */
export async function startHeavyWeb(h: {
  orders: number;
  items: number;
  t0: number;
  /** For the whole service, its web included. */
  env?: Record<string, string>;
  /** For the web process alone. */
  webEnv?: Record<string, string>;
}): Promise<HeavyWeb> {
  const env = { MAX_UNSETTLED_ORDERS: '10000000', MAX_UNSETTLED_PER_CLIENT: '10000000', ...h.env };
  const service = await createTestService({ env });
  await service.importCatalog(VENDORS, LISTINGS);
  const heavy = await service.client('heavy client');
  const other = await service.client('another client');
  await storeHeavyClient(service, heavy, {
    listing: LISTINGS[0]!,
    t0: h.t0,
    orders: h.orders,
    items: h.items,
  });
  const port = await freePort();
  const web = await service.spawn('src/server.ts', { PORT: String(port), ...h.webEnv }, 'web listening');
  return {
    service,
    web,
    baseUrl: `http://127.0.0.1:${port}`,
    heavy,
    other,
    async close() {
      await stopChild(web);
      await service.close({ checkMoney: false });
    },
  };
}

/** The 99th percentile (nearest rank) of `ms`. */
export const p99 = (ms: number[]): number => [...ms].sort((a, b) => a - b)[Math.ceil(ms.length * 0.99) - 1]!;

/**
 * Times `fn` again and again until `done` says stop (at least once), starting each at most every `paceMs` (a
 * client within its rate limit); the times of `fn` alone.
 */
export async function timedUntil(
  done: () => boolean,
  fn: () => Promise<void>,
  paceMs = 0,
): Promise<number[]> {
  const times: number[] = [];
  do {
    const began = performance.now();
    await fn();
    const took = performance.now() - began;
    times.push(took);
    if (took < paceMs) await setTimeout(paceMs - took);
  } while (!done());
  return times;
}
