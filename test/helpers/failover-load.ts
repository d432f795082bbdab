// A server lost under load (test/failover, scripts/bench/failover.ts): a web, a worker and a clock process on the
// given store and Redis, several callers ordering (a scarce and a plentiful listing), asking dry runs, getting and
// searching, each request retried with its own Svc-RequestId until it is answered below 500; `lose` takes the
// server away (and has its replacement take over) while they go on. What the callers and the store saw is returned
// for the caller to judge (expectNothingLost in the tests, figures in the benchmark).
import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, inject } from 'vitest';
import {
  createSigningClient,
  type OrderResponse,
  type SignedResponse,
  type SigningClient,
} from './signed-client.js';
import { loadConfig } from '../../src/config/config.js';
import { ItemStatus } from '../../src/domain/item-status.js';
import { addCard, createClient } from '../../src/services/client-keys.js';
import { openStore } from '../../src/store/open-store.js';
import { freePort } from '../../scripts/redis.js';
import type { Probe } from './store.probe.js';
import { LISTINGS, orderBody, VENDORS } from './fixtures.js';
import { ledgerBalance } from './ledger.js';
import { spawnProcess, stopChild } from './test-service.js';
import { sleep, until } from './wait.js';

export const SCARCE = { listingId: 2001, copies: 8 };
export const PLENTY = { listingId: 2002, copies: 100_000 };
export const MAX_PROCESS_ATTEMPTS = 5;

/** One answer a caller got; `at` tells when it was sent (the load's `at()` then). */
export interface Answer<At = number> {
  at: At;
  /** ms from sending to the answer. */
  ms: number;
  what: string;
  status: number;
  svcStatus: number[];
  /** The `Retry-After` header, when the answer had one. */
  retryAfter?: string;
}

/** A request that got no answer (a reset, a connection closed unanswered), or an answer that was wrong. */
export interface Failure<At = number> {
  /** When the request was sent (a wrong answer: when it came). */
  at: At;
  /** When an unanswered request was given up on: its connection closed, or reset. */
  endedAt?: At;
  what: string;
  kind: 'unanswered' | 'wrong';
  message: string;
}

export interface LoadOptions {
  /** Every other plentiful order is synchronous (no `Prefer: respond-async`): it waits for the worker's outcome. */
  synchronous?: boolean;
}

export interface FailoverRun {
  answers: Answer[];
  /** Svc-RequestId → the order it was given. */
  accepted: Map<string, number>;
  networkErrors: string[];
  /**
   * ms from the loss to the first order accepted that was sent once `lose` was done (the old server gone and, for
   * PostgreSQL, the standby promoted): an order sent before could still reach the old server.
   */
  acceptedAgainMs: number;
  /** ms that `lose` took (for a frozen link: the freeze, up to the thaw). */
  lostForMs: number;
  /** ms from the loss until every accepted order was settled. */
  settledMs: number;
  /** Each process's exit code or signal (null: still running), web, worker, clock. */
  exits: (number | string | null)[];
  /** Every JSON log line each process wrote, web, worker, clock. */
  logs: string[][];
  /** What each process printed last, to tell why something failed. */
  tails(): string;
}

/**
 * What every process of a service under load gets besides its store (a temporary directory of its own, which
 * `cleanups` removes): a fresh secrets key, the run's Redis under a queue prefix of its own, JSON logs, no rate
 * limit, reconciliation every 2 s and MAX_PROCESS_ATTEMPTS.
 */
export function loadedServiceEnv(cleanups: (() => Promise<unknown>)[]): Record<string, string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-load-'));
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
  return {
    SECRETS_KEY: crypto.randomBytes(32).toString('hex'),
    REDIS_URL: inject('redisUrl'),
    QUEUE_PREFIX: `l${crypto.randomBytes(5).toString('hex')}`,
    DB_PATH: path.join(dir, 'unused.db'),
    LOG_PRETTY: 'false',
    RATE_LIMIT_PER_S: '0',
    RECONCILE_CRON: '*/2 * * * * *',
    MAX_PROCESS_ATTEMPTS: String(MAX_PROCESS_ATTEMPTS),
  };
}

export interface Caller {
  client: SigningClient;
  ccToken: string;
}

/** The listings of the load: the fixtures', with SCARCE and PLENTY copies. */
export const LOAD_LISTINGS = LISTINGS.map((l) =>
  l.listingId === SCARCE.listingId
    ? { ...l, quantity: SCARCE.copies }
    : l.listingId === PLENTY.listingId
      ? { ...l, quantity: PLENTY.copies }
      : l,
);

/** The catalog (SCARCE and PLENTY copies), and the callers with their keys and cards, in the store of `env`. */
export async function seedCallers(env: Record<string, string>, baseUrl: string): Promise<Caller[]> {
  const store = await openStore(loadConfig(env), 'seed', () => undefined);
  const CALLERS = 6;
  try {
    await store.catalog.importCatalog(VENDORS, LOAD_LISTINGS);
    const callers: Caller[] = [];
    for (let i = 0; i < CALLERS; i += 1) {
      const client = await createClient(store.clients, `caller ${i}`, Date.now());
      const card = await addCard(store.clients, client.clientId, false, Date.now());
      callers.push({
        client: createSigningClient({ baseUrl, accessKey: client.accessKey, secretKey: client.secretKey }),
        ccToken: card.token,
      });
    }
    return callers;
  } finally {
    await store.close();
  }
}

/** What is wrong with an answered order (a real one's, a dry run's, a get's) for one copy of `listingId`. */
function wrongOrder(body: unknown, listingId: number, orderId?: number): string | undefined {
  const order = body as Partial<OrderResponse>;
  const listing = order.listings?.[0];
  if (orderId !== undefined && order.orderId !== orderId) return `orderId ${order.orderId}, not ${orderId}`;
  if (order.listings?.length !== 1 || listing?.listingId !== listingId || listing.quantity !== 1)
    return `listings ${JSON.stringify(order.listings)}, not one copy of ${listingId}`;
  if (listing.orderItems?.length !== 1) return `${listing.orderItems?.length} items, not 1`;
  return undefined;
}

/**
 * The load: each caller in turn orders a scarce and a plentiful listing, asks for a dry run, gets one of its orders
 * and searches; every request is retried with its own Svc-RequestId until it is answered below 500. Each answer is
 * stamped with `at()` when it was sent; stop() ends the load once every caller's request in flight is answered.
 * Each request that got no answer, and each order answered 200 that is not the one asked for, is a failure.
 */
export function startLoad<At>(callers: Caller[], at: () => At, options: LoadOptions = {}) {
  let loading = true;
  const answers: Answer<At>[] = [];
  const accepted = new Map<string, number>();
  const networkErrors: string[] = [];
  const failures: Failure<At>[] = [];
  /** The numbers of the requests sent and not yet answered or given up on, each numbered as it is sent. */
  const inFlight = new Set<number>();
  let sent = 0;
  const send = async <T>(what: string, call: (requestId: string) => Promise<SignedResponse<T>>) => {
    const requestId = crypto.randomUUID();
    for (;;) {
      const sentAt = at();
      const started = Date.now();
      const number = sent++;
      inFlight.add(number);
      const answer = await call(requestId).catch((err: unknown) => {
        const cause = (err as Error).cause as Error | undefined;
        const message = `${(err as Error).message}${cause ? `: ${cause.message}` : ''}`;
        networkErrors.push(`${what}: ${message}`);
        failures.push({ at: sentAt, endedAt: at(), what, kind: 'unanswered', message });
        return null;
      });
      inFlight.delete(number);
      const ms = Date.now() - started;
      if (answer) {
        const retryAfter = answer.headers['retry-after'];
        const { status, svcStatus } = answer;
        answers.push({ at: sentAt, ms, what, status, svcStatus, ...(retryAfter ? { retryAfter } : {}) });
      }
      if (answer && answer.status < 500) return { requestId, answer };
      await sleep(100);
    }
  };
  const order = async (caller: Caller, what: string, listingId: number, dryrun: boolean, async = true) => {
    const body = orderBody(caller.ccToken, {
      listings: [{ listingId, quantity: 1 }],
      ...(dryrun ? { dryrun } : {}),
    });
    const { requestId, answer } = await send(what, (requestId) =>
      caller.client.request('POST', '/v1/orders', body, {
        requestId,
        headers: async ? { Prefer: 'respond-async' } : {},
      }),
    );
    const orderId = (answer.body as { orderId?: number }).orderId;
    if (!dryrun && answer.status === 200 && orderId !== undefined) accepted.set(requestId, orderId);
    const wrong = answer.status === 200 ? wrongOrder(answer.body, listingId) : undefined;
    if (wrong) failures.push({ at: at(), what, kind: 'wrong', message: wrong });
    return dryrun || orderId === undefined ? undefined : { orderId, listingId };
  };
  const running = callers.map(async (caller, n) => {
    const mine: { orderId: number; listingId: number }[] = [];
    for (let i = n; loading; i += 1) {
      switch (i % 5) {
        case 0:
          mine.push((await order(caller, 'scarce order', SCARCE.listingId, false))!);
          break;
        case 1: {
          const async = !options.synchronous || i % 10 === 1;
          mine.push((await order(caller, 'order', PLENTY.listingId, false, async))!);
          break;
        }
        case 2:
          await order(caller, 'dry run', PLENTY.listingId, true);
          break;
        case 3: {
          const last = mine.at(-1);
          if (last === undefined) break;
          const { answer } = await send('get', (id) =>
            caller.client.getOrder(last.orderId, { requestId: id }),
          );
          const wrong =
            answer.status === 200 ? wrongOrder(answer.body, last.listingId, last.orderId) : undefined;
          if (wrong) failures.push({ at: at(), what: 'get', kind: 'wrong', message: wrong });
          break;
        }
        default:
          await send('search', (id) => caller.client.searchOrders({ limit: 5 }, { requestId: id }));
      }
    }
  });
  return {
    answers,
    /** Svc-RequestId → the order it was given. */
    accepted,
    networkErrors,
    failures,
    /** How many requests have been sent so far (retries included). */
    sent: () => sent,
    /** Whether each of the first `count` requests sent has been answered or given up on. */
    endedThrough: (count: number) => [...inFlight].every((number) => number >= count),
    async stop() {
      loading = false;
      await Promise.all(running);
    },
  };
}

/**
 * A web (on `port`, its metrics on `metricsPort` when given), a worker and a clock process on `env`, added to
 * `processes`; `printed` is what each printed after it was ready, `tails()` the last lines of each, to tell why one
 * exited.
 */
export async function startService(
  processes: Set<ChildProcess>,
  env: Record<string, string>,
  port: number,
  metricsPort?: number,
) {
  // Three processes start from source on a machine that may be busy with other test files.
  const slowStart = { readyMs: 90_000 };
  const webEnv = {
    ...env,
    PORT: String(port),
    ...(metricsPort ? { METRICS_PORT: String(metricsPort) } : {}),
  };
  const web = await spawnProcess(processes, 'src/server.ts', webEnv, 'web listening', slowStart);
  const worker = await spawnProcess(processes, 'workers/order.worker.ts', env, 'worker ready', slowStart);
  const clock = await spawnProcess(processes, 'jobs/clock.ts', env, 'clock ready', slowStart);
  const all = [web, worker, clock];
  const printed = all.map((child) => {
    const out: string[] = [];
    for (const stream of [child.stdout!, child.stderr!])
      stream.on('data', (chunk: Buffer) => out.push(chunk.toString()));
    return out;
  });
  const tails = () => printed.map((out) => out.join('').split('\n').slice(-40).join('\n')).join('\n----\n');
  return { web, worker, clock, all, printed, tails };
}

/** Waits up to `timeoutMs` for every accepted order to be settled; else fails saying what is left. */
export async function allSettled(probe: Probe, timeoutMs: number, tails: () => string): Promise<void> {
  await until(
    // A probe connection that met a lost server fails once; the next one reaches the new server.
    async () =>
      Number(await probe.scalar("SELECT count(*) FROM orders WHERE phase <> 'settled'").catch(() => -1)) ===
      0,
    timeoutMs,
    'every accepted order settled',
  ).catch(async (err: Error) => {
    // What is left, and what the processes said last, to tell a lost job from a slow one.
    const left = await probe.all(
      "SELECT order_id, phase, attempts, lease_until FROM orders WHERE phase <> 'settled' ORDER BY order_id",
    );
    throw new Error(`${err.message}; unsettled: ${JSON.stringify(left)}; the processes printed:\n${tails()}`);
  });
}

/**
 * Runs the load for `beforeMs`, calls `lose`, goes on until an order is accepted again and `afterMs` more, then
 * waits (up to `settleMs`) for every accepted order to be settled. The processes are killed at the end.
 */
export async function runThroughFailover(options: {
  env: Record<string, string>;
  port: number;
  probe: Probe;
  lose: () => Promise<void>;
  beforeMs?: number;
  afterMs?: number;
  acceptWithinMs?: number;
  settleMs?: number;
  /** Called once everything is settled, before the processes stop: what the operator sees (/readyz, metrics). */
  atEnd?: (urls: { api: string; metrics: string }, logs: string[][]) => Promise<void>;
}): Promise<FailoverRun> {
  const { env, port, probe, lose } = options;
  const baseUrl = `http://127.0.0.1:${port}`;
  const callers = await seedCallers(env, baseUrl);
  const metricsPort = await freePort();
  const processes = new Set<ChildProcess>();
  try {
    const { all, printed, tails } = await startService(processes, env, port, metricsPort);
    let lostAt = Number.POSITIVE_INFINITY;
    const load = startLoad(callers, () => Date.now() - lostAt);
    const { answers, accepted, networkErrors } = load;
    await sleep(options.beforeMs ?? 3_000);
    lostAt = Date.now();
    await lose();
    const lostDone = Date.now() - lostAt;
    const acceptedAgain = () =>
      answers.find((a) => a.at >= lostDone && a.status === 200 && a.what.endsWith('order'));
    await until(
      () => acceptedAgain() !== undefined,
      options.acceptWithinMs ?? 60_000,
      'an order accepted again',
    ).catch((err: Error) => {
      throw new Error(`${err.message}; the processes printed:\n${tails()}`);
    });
    const acceptedAgainMs = acceptedAgain()!.at;
    await sleep(options.afterMs ?? 3_000);
    await load.stop();
    await allSettled(probe, options.settleMs ?? 90_000, tails);
    const settledMs = Date.now() - lostAt;
    const logs = printed.map((out) =>
      out
        .join('')
        .split('\n')
        .filter((line) => line.startsWith('{')),
    );
    await options.atEnd?.({ api: baseUrl, metrics: `http://127.0.0.1:${metricsPort}/metrics` }, logs);
    return {
      answers,
      accepted,
      networkErrors,
      acceptedAgainMs,
      lostForMs: lostDone,
      settledMs,
      exits: all.map((child) => child.exitCode ?? child.signalCode),
      logs,
      tails,
    };
  } finally {
    await Promise.all([...processes].map((child) => stopChild(child, 'SIGKILL')));
  }
}

/** What a lost order, a doubled one, a wrong stock or a wrong payment would show, read from the store. */
export async function storeFindings(probe: Probe, accepted: Map<string, number>) {
  const stored = await probe.all<{ request_id: string; order_id: number }>(
    'SELECT request_id, order_id FROM orders',
  );
  const stock: { listingId: number; total: number }[] = [];
  for (const { listingId } of [SCARCE, PLENTY]) {
    const left = Number(await probe.scalar('SELECT stock FROM listings WHERE listing_id = ?', listingId));
    const bought = Number(
      await probe.scalar(
        'SELECT count(*) FROM order_items WHERE listing_id = ? AND status = ?',
        listingId,
        ItemStatus.ORDERED,
      ),
    );
    stock.push({ listingId, total: left + bought });
  }
  const unbalanced: { orderId: number; ledger: number; bought: number; gateway: number }[] = [];
  for (const orderId of accepted.values()) {
    const { ledger, bought, gateway } = await ledgerBalance(probe, orderId);
    if (ledger !== bought || (gateway ?? 0) !== bought) unbalanced.push({ orderId, ledger, bought, gateway });
  }
  return {
    orders: new Map(stored.map((row) => [row.request_id, Number(row.order_id)])),
    failedItems: Number(
      await probe.scalar('SELECT count(*) FROM order_items WHERE status = ?', ItemStatus.FAILED),
    ),
    maxAttempts: Number(await probe.scalar('SELECT max(attempts) FROM orders')),
    stock,
    scarceLeft: Number(
      await probe.scalar('SELECT stock FROM listings WHERE listing_id = ?', SCARCE.listingId),
    ),
    unbalanced,
  };
}

/**
 * What a failover must keep: no process exits, no 5xx but 503 5030, orders accepted again within
 * `acceptWithinMs` of the loss, one order per request id (the one its caller was given), none FAILED, stock and
 * payments exact.
 */
export async function expectNothingLost(
  probe: Probe,
  run: FailoverRun,
  acceptWithinMs = 15_000,
): Promise<void> {
  expect(run.exits, run.tails()).toEqual([null, null, null]);
  const refused = run.answers.filter((a) => a.status >= 500);
  expect(refused.filter((a) => a.status !== 503 || !a.svcStatus.includes(5030))).toEqual([]);
  expect(run.networkErrors).toEqual([]);
  expect(run.answers.filter((a) => a.status >= 400 && a.status < 500)).toEqual([]);
  expect(run.acceptedAgainMs).toBeLessThanOrEqual(acceptWithinMs);
  expectFindingsExact(await storeFindings(probe, run.accepted), run.accepted, run.answers);
}

/**
 * One order per accepted request (the one its caller was given), none FAILED nor near its last attempt, stock and
 * every payment exact, and the scarce listing sold out when it was asked for more often than it had copies.
 */
export function expectFindingsExact<At>(
  found: Awaited<ReturnType<typeof storeFindings>>,
  accepted: Map<string, number>,
  answers: Answer<At>[],
): void {
  expect(found.orders).toEqual(accepted);
  expect(found.failedItems).toBe(0);
  expect(found.maxAttempts).toBeLessThan(MAX_PROCESS_ATTEMPTS);
  expect(found.stock).toEqual([
    { listingId: SCARCE.listingId, total: SCARCE.copies },
    { listingId: PLENTY.listingId, total: PLENTY.copies },
  ]);
  const scarceAsked = answers.filter((a) => a.what === 'scarce order' && a.status === 200).length;
  if (scarceAsked > SCARCE.copies) expect(found.scarceLeft).toBe(0);
  expect(found.unbalanced).toEqual([]);
}
