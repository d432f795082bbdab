// Load through a frozen link: callers placing orders while a TCP proxy in front of Redis or the store freezes
// (the connections stay open, no byte passes), and what they saw (test/integration/frozen-*.test.ts).
import crypto from 'node:crypto';
import { afterEach, expect } from 'vitest';
import { orderBody } from './fixtures.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';
import { signed, type Credentials, type TestService } from './test-service.js';
import { sleep, until } from './wait.js';

export const FREEZE_MS = 20_000;
/** Generous against the 5 s the service aims at: a busy machine adds its own delays. */
export const LONGEST_REQUEST_MS = 8_000;
export const SERVED_AGAIN_WITHIN_MS = 10_000;

/** A proxy in front of the server of `url` (redis:// or postgres://), and the URL that goes through it. */
export async function proxied(url: string): Promise<{ proxy: TcpProxy; url: string }> {
  const target = new URL(url);
  const proxy = await startTcpProxy(target.hostname, Number(target.port));
  target.host = `127.0.0.1:${proxy.port}`;
  return { proxy, url: target.toString() };
}

interface Sent {
  startedAt: number;
  ms: number;
  svcStatus: string;
  retryAfter?: string;
}

/** Callers placing orders one after another until stopped; what each request got and how long it took. */
function load(svc: TestService, buyers: Credentials[]) {
  const sent: Sent[] = [];
  const accepted: number[] = [];
  let running = true;
  const caller = async (buyer: Credentials) => {
    while (running) {
      const startedAt = Date.now();
      const res = await signed(svc.app, buyer, 'POST', '/v1/orders', orderBody(buyer.ccToken), {
        requestId: crypto.randomUUID(),
        headers: { Prefer: 'respond-async' },
      });
      const svcStatus = String(res.headers['svc-status']);
      sent.push({ startedAt, ms: Date.now() - startedAt, svcStatus, retryAfter: res.headers['retry-after'] });
      if (svcStatus === '2010') accepted.push(res.body.orderId as number);
      await sleep(svcStatus === '2010' ? 100 : 250);
    }
  };
  const done = Promise.all(buyers.map(caller));
  return {
    sent,
    accepted,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

/** Load, a freeze of `proxy` for FREEZE_MS, the thaw, and what a client saw. */
export async function freezeUnderLoad(svc: TestService, proxy: TcpProxy, callers: number) {
  const buyers = await Promise.all(
    Array.from({ length: callers }, (_, i) => svc.client(`frozen-link buyer ${i}`)),
  );
  const traffic = load(svc, buyers);
  await sleep(2000);
  const frozenAt = Date.now();
  proxy.freeze();
  await sleep(FREEZE_MS);
  proxy.pass();
  const thawedAt = Date.now();
  const servedAfterThaw = () => traffic.sent.some((s) => s.startedAt >= thawedAt && s.svcStatus === '2010');
  await until(servedAfterThaw, SERVED_AGAIN_WITHIN_MS + 2000, 'an order accepted after the thaw').catch(
    () => undefined,
  );
  await traffic.stop();

  // Every request in flight at some time of the freeze.
  const during = traffic.sent.filter((s) => s.startedAt < thawedAt && s.startedAt + s.ms > frozenAt);
  const servedAgain = traffic.sent.find((s) => s.startedAt >= thawedAt && s.svcStatus === '2010');
  return { ...traffic, during, frozenAt, thawedAt, servedAgain };
}

/** The service and proxy a test makes, closed after each test (the link passing again first). */
export function frozenLinkTest(): { service?: TestService; link?: TcpProxy } {
  const made: { service?: TestService; link?: TcpProxy } = {};
  afterEach(async () => {
    made.link?.pass();
    await made.service?.close();
    await made.link?.close();
    made.service = undefined;
    made.link = undefined;
  });
  return made;
}

/**
 * What every frozen link must give a client: no request held longer than LONGEST_REQUEST_MS, an order accepted
 * within SERVED_AGAIN_WITHIN_MS of the thaw, and every accepted order final.
 */
export async function expectServedThrough(
  svc: TestService,
  run: Awaited<ReturnType<typeof freezeUnderLoad>>,
  what: string,
) {
  expect(run.during.length, `requests sent while ${what} was frozen`).toBeGreaterThan(0);
  expect(Math.max(...run.during.map((s) => s.ms))).toBeLessThan(LONGEST_REQUEST_MS);
  expect(run.servedAgain, 'an order accepted after the thaw').toBeDefined();
  expect(run.servedAgain!.startedAt + run.servedAgain!.ms - run.thawedAt).toBeLessThan(
    SERVED_AGAIN_WITHIN_MS,
  );
  await expectAllFinal(svc, run.accepted);
}

async function expectAllFinal(svc: TestService, accepted: number[]) {
  expect(accepted.length).toBeGreaterThan(0);
  await expect
    .poll(
      () => svc.probe.scalar<number>(`SELECT count(*) FROM orders WHERE phase <> 'settled'`).then(Number),
      { timeout: 60_000, interval: 500 },
    )
    .toBe(0);
}

// Reconciliation enqueues what could not be enqueued while Redis was frozen; short leases let a job cut off
// mid-attempt be taken up again soon.
export const FAULT_ENV = { ATTEMPT_LEASE_S: '10', QUEUED_STALE_AFTER_S: '2', WORKER_CONCURRENCY: '4' };
export const CLOCK_ENV = { RECONCILE_CRON: '* * * * * *' };
