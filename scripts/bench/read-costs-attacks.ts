// The attacks of the bench of reads charged by their cost (read-costs.ts), each with another client (A) measured
// alone just before it, then during it (test/helpers/read-attacks.ts: the shapes of the integration tests).
import fs from 'node:fs';
import type { Store } from '../../src/store/port/store.port.js';
import {
  LARGE_PAGES,
  REPEATED_PARAMETER,
  burstAttack,
  keepInFlight,
  victimWhile,
  windowWithoutMatches,
  type VictimSeen,
} from '../../test/helpers/read-attacks.js';
import { startReceiver, type Receiver } from '../../test/helpers/webhook-receiver.js';
import { waitFor } from './processes.js';
import type { AttackRun, ThreadsAndRss } from './read-costs-report.js';
import { DEFAULT_RATE, NO_RATE, T0, timedSearch, withWeb, type Prepared } from './read-costs-setup.js';
import { percentile, sleep } from './samples.js';
import { benchClient } from './webhook-clients.js';

/** Every attack asked for, in order. */
export async function attacks(p: Prepared): Promise<AttackRun[]> {
  const bursts = p.bench.attacks.some((a) => a === 'pages' || a === 'queries');
  const runs = bursts ? await burstAttacks(p) : [];
  if (p.bench.attacks.includes('searches')) runs.push(await wideSearches(p));
  if (p.bench.attacks.includes('receivers')) runs.push(await slowReceivers(p));
  return runs;
}

/** Threads and resident memory (MiB) of a process now. */
function threadsAndRss(pid: number): ThreadsAndRss {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
  return { threads: field('Threads'), rssMiB: Math.round(field('VmRSS') / 1024) };
}

/** A alone for the bench's seconds, then A while `attacking` runs (for as long). */
async function aloneThenDuring(
  p: Prepared,
  baseUrl: string,
  attacking: () => Promise<string>,
): Promise<{ alone: VictimSeen; during: VictimSeen; answers: string }> {
  const alone = await victimWhile(baseUrl, p.a, () => sleep(p.bench.seconds * 1000));
  const during = await victimWhile(baseUrl, p.a, attacking);
  return { alone, during, answers: during.attack };
}

const counted = (statuses: Record<string, number>) =>
  Object.entries(statuses)
    .map(([status, n]) => `${n} × ${status}`)
    .join(', ');
const tally = (answers: string[]) => {
  const by: Record<string, number> = {};
  for (const answer of answers) {
    const status = answer.split(' ')[0]!;
    by[status] = (by[status] ?? 0) + 1;
  }
  return counted(by);
};

/** The attacks on a web with the rate limit at its default. */
async function burstAttacks(p: Prepared): Promise<AttackRun[]> {
  const runs: AttackRun[] = [];
  const b = p.byItems.get(250)!;
  const shapes = { pages: LARGE_PAGES, queries: REPEATED_PARAMETER } as const;
  await withWeb(p, DEFAULT_RATE, async (baseUrl) => {
    for (const name of ['pages', 'queries'] as const) {
      if (!p.bench.attacks.includes(name)) continue;
      const { path: query, burst, everyMs } = shapes[name];
      const seen = await aloneThenDuring(p, baseUrl, async () =>
        counted(
          (await burstAttack(baseUrl, b, query, { burst, everyMs, ms: p.bench.seconds * 1000 })).statuses,
        ),
      );
      runs.push({ attack: name, ...seen });
      p.bench.say(`${p.store.kind}: ${name} done (B: ${seen.answers})`);
    }
  });
  return runs;
}

const IN_FLIGHT = 20;

/**
 * 20 wide searches of B in flight. PostgreSQL: as pool-share.test.ts runs them. SQLite: each given up on past a
 * third of its time alone, its thread let go; the web's threads and RSS sampled every 100 ms.
 */
async function wideSearches(p: Prepared): Promise<AttackRun> {
  const query = windowWithoutMatches(T0, p.bench.wide);
  const sqlite = p.store.kind === 'sqlite';
  const aloneMs = await withWeb(p, NO_RATE, async (baseUrl) => {
    const ms: number[] = [];
    for (let i = 0; i < 7; i++) ms.push((await timedSearch(baseUrl, p.wide, query)).ms);
    return percentile(ms.slice(2), 50);
  });
  const timeoutMs = sqlite ? Math.max(1, Math.floor(aloneMs / 3)) : 600;
  p.bench.say(
    `${p.store.kind}: a wide search alone takes ${aloneMs.toFixed(0)} ms; DATABASE_TIMEOUT_MS=${timeoutMs}`,
  );
  const env = {
    ...NO_RATE,
    DATABASE_TIMEOUT_MS: String(timeoutMs),
    SEARCH_CONCURRENCY_PER_CLIENT: String(IN_FLIGHT),
  };
  return withWeb(p, env, async (baseUrl, web) => {
    let samples: ThreadsAndRss[] = [];
    const seen = await aloneThenDuring(p, baseUrl, async () => {
      const held = await sampled(web.pid!, () =>
        keepInFlight(baseUrl, p.wide, query, { inFlight: IN_FLIGHT, ms: p.bench.seconds * 1000 }),
      );
      samples = held.samples;
      return tally(held.result);
    });
    await sleep(1000);
    const most = (field: keyof ThreadsAndRss) => Math.max(...samples.map((s) => s[field]));
    const figures = {
      before: samples[0]!,
      most: { threads: most('threads'), rssMiB: most('rssMiB') },
      after: threadsAndRss(web.pid!),
    };
    p.bench.say(`${p.store.kind}: searches done (B: ${seen.answers})`);
    return { attack: 'searches', ...seen, aloneMs, timeoutMs, ...(sqlite ? { web: figures } : {}) };
  });
}

/** `fn`'s result, and the threads and RSS of process `pid` when it began and every 100 ms until it ended. */
async function sampled<T>(
  pid: number,
  fn: () => Promise<T>,
): Promise<{ result: T; samples: ThreadsAndRss[] }> {
  const samples = [threadsAndRss(pid)];
  const sampler = setInterval(() => samples.push(threadsAndRss(pid)), 100);
  try {
    return { result: await fn(), samples };
  } finally {
    clearInterval(sampler);
  }
}

const SLOW_RECEIVERS = 8;
const SLOW_ANSWER_MS = 6000;

/** Lateness (ms) of the events `receiver` got from index `from` on: arrival less the event's createDate. */
const lateness = (receiver: Receiver, from: number) =>
  receiver.received.slice(from).map((r) => r.at - Date.parse(r.event.createDate));

/** A's events, from its orders settled by a worker, alone and while B's 8 slow receivers hold their slots. */
async function slowReceivers(p: Prepared): Promise<AttackRun> {
  const prompt = await startReceiver(() => 204);
  const slow = await Promise.all(
    Array.from({ length: SLOW_RECEIVERS }, () =>
      startReceiver(() => ({ status: 200, afterMs: SLOW_ANSWER_MS })),
    ),
  );
  const opened = await p.store.open('bench');
  try {
    await opened.webhooks.add({ clientId: p.a.clientId, url: prompt.url('/a'), now: Date.now() });
    return await withWeb(
      p,
      DEFAULT_RATE,
      async (baseUrl) => {
        const events = async (phase: () => Promise<VictimSeen>) => {
          const from = prompt.received.length;
          const seen = await phase();
          const accepted = seen.orderStatuses.filter((s) => s === 200).length;
          await waitFor(
            () => prompt.received.length - from >= accepted,
            "A's events delivered",
            120_000,
            100,
          ).catch(() =>
            p.bench.say(`only ${prompt.received.length - from} of ${accepted} events of A delivered`),
          );
          return { seen, late: lateness(prompt, from) };
        };
        const alone = await events(() => victimWhile(baseUrl, p.a, () => sleep(p.bench.seconds * 1000)));
        await backlogOfSlowClient(opened, slow);
        const during = await events(() =>
          victimWhile(baseUrl, p.a, async () => {
            await sleep(p.bench.seconds * 1000);
            return '';
          }),
        );
        const slowAnswers = slow.reduce((n, r) => n + r.received.length, 0);
        // Closed before the worker stops: a held attempt ends when its connection does, so it stops at once.
        await Promise.all(slow.map((r) => r.close()));
        p.bench.say(`${p.store.kind}: receivers done (B's receivers got ${slowAnswers})`);
        return {
          attack: 'receivers' as const,
          alone: alone.seen,
          during: during.seen,
          answers: `${slowAnswers} deliveries, ${slow.reduce((n, r) => n + r.maxOpen, 0)} open at most`,
          webhookP50: { alone: percentile(alone.late, 50), during: percentile(during.late, 50) },
        };
      },
      1,
    );
  } finally {
    await Promise.all([prompt, ...slow].map((r) => r.close()));
    await opened.close();
  }
}

/** B: a client with a webhook to each slow receiver, 4 events to each, sent again 30 times (992 deliveries). */
async function backlogOfSlowClient(store: Store, slow: Receiver[]): Promise<void> {
  const b = await benchClient(store, 'slow receivers', slow[0]!.url('/b/0'));
  const webhooks = [b.webhook];
  for (const [i, r] of slow.slice(1).entries())
    webhooks.push(
      await store.webhooks.add({ clientId: b.webhook.clientId, url: r.url(`/b/${i + 1}`), now: Date.now() }),
    );
  for (let i = 0; i < 4; i++) await b.settle();
  for (const webhook of webhooks)
    for (let i = 0; i < 30; i++) await store.webhooks.replay(webhook.webhookId, 0, Date.now());
  const opened = () => slow.reduce((n, r) => n + r.received.length, 0);
  await waitFor(() => opened() >= SLOW_RECEIVERS, 'the slow receivers taking their share', 60_000, 50);
}
