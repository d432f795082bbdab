// One client's slow searches take only its share of a web's PostgreSQL pool (DB_POOL_CLIENT_SHARE): while client B
// keeps 20 expensive searches in flight, each of which reads its whole window of history in the server (the
// unbounded path of an update range that matches none of it), client A's orders are accepted, none answered 503,
// and its searches answered. B's searches that time out never make the pool fail A's requests as if the server were
// down: the pool's fail-fast judges the server, which answers A all along.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orderBody } from '../helpers/fixtures.js';
import { startHeavyWeb, type HeavyWeb } from '../helpers/heavy-web.js';
import { WIDE_HISTORY, keepInFlight, windowWithoutMatches } from '../helpers/read-attacks.js';
import { createSigningClient } from '../helpers/signed-client.js';
import type { Credentials } from '../helpers/test-service.js';
import { TEST_STORE, THROUGH_PGBOUNCER } from '../helpers/test-store.js';

/** B's history: WIDE_HISTORY's orders created a second apart, some of them before the searched window. */
const { orders: ORDERS, items: ITEMS } = WIDE_HISTORY;
const IN_FLIGHT = 20;
const LOAD_MS = 15_000;
const TIMEOUT_MS = 600;
const T0 = Date.now() - 10 * 86_400_000;

let web: HeavyWeb | undefined;
const clientOf = (creds: Credentials) => createSigningClient({ baseUrl: web!.baseUrl, ...creds });

describe.runIf(TEST_STORE === 'postgres' && !THROUGH_PGBOUNCER)(
  "a web's PostgreSQL pool shared by clients",
  () => {
    beforeAll(async () => {
      // A search that runs past this is given up on (503 to B), as a statement of a server that stopped answering
      // would be: the bound at which B's searches both fill the pool and time out.
      // B's searches in flight are not bounded per web process here, so that the pool's share is what holds them.
      const webEnv = {
        RATE_LIMIT_PER_S: '0',
        DATABASE_TIMEOUT_MS: String(TIMEOUT_MS),
        SEARCH_CONCURRENCY_PER_CLIENT: String(IN_FLIGHT),
      };
      web = await startHeavyWeb({ t0: T0, orders: ORDERS, items: ITEMS, webEnv });
    }, 240_000);

    afterAll(async () => {
      await web?.close();
    });

    // No order matches, and the page is looked for through every item of the window (windowWithoutMatches).
    const slowSearch = windowWithoutMatches(T0);

    it(`while B holds ${IN_FLIGHT} such searches in flight, A's orders are accepted (none 503) and its searches answered`, async () => {
      const bRuns = keepInFlight(web!.baseUrl, web!.heavy, slowSearch, { inFlight: IN_FLIGHT, ms: LOAD_MS });
      const a = clientOf(web!.other);
      const orders: string[] = [];
      const searches: string[] = [];
      const until = Date.now() + LOAD_MS;
      while (Date.now() < until) {
        const order = await a.request('POST', '/v1/orders', orderBody(web!.other.ccToken), {
          headers: { Prefer: 'respond-async' },
        });
        orders.push(`${order.status} ${order.svcStatus.join(',')}`);
        const search = await a.request('GET', '/v1/orders?limit=5');
        searches.push(`${search.status} ${search.svcStatus.join(',')}`);
      }
      const bAnswers = await bRuns;
      // B's searches found nothing, or were given up on (its own 503s, past its share or past the bound).
      expect(bAnswers.length).toBeGreaterThanOrEqual(IN_FLIGHT);
      expect(bAnswers.filter((a) => a !== '200 2000 0' && !a.startsWith('503 5030'))).toEqual([]);
      expect(orders.filter((s) => !s.startsWith('200'))).toEqual([]);
      expect(searches.filter((s) => !s.startsWith('200'))).toEqual([]);
      expect(orders.length).toBeGreaterThanOrEqual(5);
    }, 120_000);
  },
);
