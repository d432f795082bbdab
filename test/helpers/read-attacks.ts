// One client (B) attacking what reads share, and what another client (A) sees meanwhile: the shapes of the tests
// (read-costs.test.ts, pool-share.test.ts) and of the benchmark that measures them (scripts/bench/read-costs.ts).
import { execFile as execFileCb } from 'node:child_process';
import crypto from 'node:crypto';
import { promisify } from 'node:util';
import { orderBody } from './fixtures.js';
import { timedUntil } from './heavy-web.js';
import { createSigningClient, signedHeaders } from './signed-client.js';

const execFile = promisify(execFileCb);

/** What B's burst attack saw: its answers by HTTP status ('failed' when no answer came), the largest body of a 200. */
export interface BurstAnswers {
  statuses: Record<string, number>;
  largest: number;
}

// The attack, run in a process of its own so that sending it costs the process that times A nothing: `burst`
// requests at once every `everyMs` (once the last are answered), for `ms`.
const ATTACKER = `
const { url, headers, burst, everyMs, ms } = JSON.parse(process.env.ATTACK);
const statuses = {};
let largest = 0;
const send = async () => {
  try {
    const res = await fetch(url, { headers });
    const bytes = (await res.arrayBuffer()).byteLength;
    statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    if (res.status === 200) largest = Math.max(largest, bytes);
  } catch {
    statuses.failed = (statuses.failed ?? 0) + 1;
  }
};
(async () => {
  for (const end = Date.now() + ms; Date.now() < end; ) {
    const began = Date.now();
    await Promise.all(Array.from({ length: burst }, send));
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, everyMs - (Date.now() - began))));
  }
  process.stdout.write(JSON.stringify({ statuses, largest }));
})();
`;

/**
 * B's request `GET pathWithQuery`, signed once and sent again and again as is (a GET is not remembered, and its
 * date stays within the allowed skew), `burst` at once every `everyMs` for `ms`, from a process of its own.
 */
export async function burstAttack(
  baseUrl: string,
  keys: { accessKey: string; secretKey: string },
  pathWithQuery: string,
  { burst, everyMs, ms }: { burst: number; everyMs: number; ms: number },
): Promise<BurstAnswers> {
  const [path = '', rawQuery = ''] = pathWithQuery.split(/\?(.*)/s);
  const headers = signedHeaders(keys, 'GET', path, undefined, crypto.randomUUID(), rawQuery);
  const env = {
    ...process.env,
    ATTACK: JSON.stringify({ url: `${baseUrl}${pathWithQuery}`, headers, burst, everyMs, ms }),
  };
  const { stdout } = await execFile(process.execPath, ['-e', ATTACKER], { env, maxBuffer: 1 << 20 });
  return JSON.parse(stdout) as BurstAnswers;
}

/** The page-burst attack: the largest pages, a quarter of a key's burst allowance at once, a burst a second. */
export const LARGE_PAGES = { path: '/v1/orders?limit=100', burst: 100, everyMs: 1000 };

/** The query attack: 16 KB of one repeated parameter, 4 at once every 200 ms (20 a second). */
export const REPEATED_PARAMETER = { path: `/v1/orders?${'a&'.repeat(8000)}limit=1`, burst: 4, everyMs: 200 };

/**
 * A history of orders of `items` items created a second apart, `before` of them before the window that
 * `windowWithoutMatches` searches: with thousands of orders on each side of its update range, no narrow path serves.
 */
export const WIDE_HISTORY = { before: 20, orders: 2120, items: 125 };

/**
 * The expensive search over WIDE_HISTORY created from `t0` (and priced out a minute after each order): its window
 * holds the later orders, updated after the range; the range holds the items of the `before` orders, outside the
 * window. No order matches, and the page is looked for through every item of the window.
 */
export function windowWithoutMatches(t0: number, h = WIDE_HISTORY): string {
  const iso = (ms: number) => new Date(ms).toISOString();
  return `/v1/orders?dateStart=${iso(t0 + h.before * 1000)}&dateEnd=${iso(t0 + h.orders * 1000)}&itemUpdateDateStart=${iso(t0 + 60_000)}&itemUpdateDateEnd=${iso(t0 + 60_000 + h.before * 1000)}&limit=1`;
}

/**
 * B's `pathWithQuery` kept `inFlight` at once for `ms`, each loop sending the next once the last is answered, in
 * this process (what is held is the service's, not this process's); every answer as `status svcStatus orders`
 * (`503 5030 -`).
 */
export async function keepInFlight(
  baseUrl: string,
  keys: { accessKey: string; secretKey: string },
  pathWithQuery: string,
  { inFlight, ms }: { inFlight: number; ms: number },
): Promise<string[]> {
  const answers: string[] = [];
  const end = Date.now() + ms;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      const client = createSigningClient({ baseUrl, accessKey: keys.accessKey, secretKey: keys.secretKey });
      while (Date.now() < end) {
        const res = await client.request<{ orders?: unknown[] }>('GET', pathWithQuery);
        answers.push(`${res.status} ${res.svcStatus.join(',')} ${res.body.orders?.length ?? '-'}`);
      }
    }),
  );
  return answers;
}

/** What A observed: each kind's times (ms), its orders' HTTP statuses, and every other answer not 200. */
export interface VictimSeen {
  healthz: number[];
  search: number[];
  orderStatuses: number[];
  /** `healthz 503`, `search 429`, …: what should not have been answered. */
  refused: string[];
  /** How long A was measured. */
  seconds: number;
}

/** A's pace: a request of each kind every this many ms at most, well within its rate limit. */
export const VICTIM_PACE_MS = 50;

/**
 * A's /healthz, searches (`limit=5`) and orders (answered at once, Prefer: respond-async, of orderBody's listing),
 * each in a loop of its own until `attacking` resolves; what A observed, and what `attacking` resolved with.
 */
export async function victimWhile<T>(
  baseUrl: string,
  a: { accessKey: string; secretKey: string; ccToken: string },
  attacking: () => Promise<T>,
): Promise<VictimSeen & { attack: T }> {
  let over = false;
  const done = () => over;
  const client = createSigningClient({ baseUrl, accessKey: a.accessKey, secretKey: a.secretKey });
  const orderStatuses: number[] = [];
  const refused: string[] = [];
  const seen = (what: string, status: number) => {
    if (status !== 200) refused.push(`${what} ${status}`);
  };
  let n = 0;
  const began = performance.now();
  const [healthz, search, , attacked] = await Promise.all([
    timedUntil(done, async () => seen('healthz', (await fetch(`${baseUrl}/healthz`)).status), VICTIM_PACE_MS),
    timedUntil(
      done,
      async () => seen('search', (await client.request('GET', '/v1/orders?limit=5')).status),
      VICTIM_PACE_MS,
    ),
    timedUntil(
      done,
      async () => {
        const placed = await client.request('POST', '/v1/orders', orderBody(a.ccToken), {
          requestId: `a-${++n}-${Date.now()}`,
          headers: { prefer: 'respond-async' },
        });
        orderStatuses.push(placed.status);
        seen('order', placed.status);
      },
      VICTIM_PACE_MS,
    ),
    attacking().finally(() => (over = true)),
  ]);
  const seconds = (performance.now() - began) / 1000;
  return { healthz, search, orderStatuses, refused, seconds, attack: attacked };
}
