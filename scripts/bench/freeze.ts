// Frozen-link figures, seconds-scale: for (a) the Redis link and (b) the PostgreSQL store's link frozen
// FREEZE_MS through a TCP proxy (test/helpers/tcp-proxy.ts: the connections stay open, no byte passes) and then
// thawed, under the load of the failover tests (six callers, test/helpers/failover-load.ts): the longest request in
// flight during the freeze, the time from the thaw until an order sent after it is answered 2010, how many requests
// were answered 503 from the freeze on, the time from the thaw until every accepted order is settled, and whether
// nothing was lost (what test/failover asserts: money and stock exact, every accepted order final, one order per
// request id); --runs of each, median and worst. The servers are private, on free ports; --write puts the section
// "Frozen links" in BENCHMARKS.md.
//   node --import tsx scripts/bench/freeze.ts [--runs 5] [--only redis|store] [--write]
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expectNothingLost, type FailoverRun } from '../../test/helpers/failover-load.js';
import { CLOCK_ENV, FAULT_ENV, FREEZE_MS, proxied } from '../../test/helpers/freeze-load.js';
import type { TcpProxy } from '../../test/helpers/tcp-proxy.js';
import { sleep } from '../../test/helpers/wait.js';
import type { Probe } from '../../test/helpers/store.probe.js';
import { writeSection } from './benchmarks-file.js';
import { figuresOfLoss, runSettings, summary, type Spread, type Summary } from './fault-runs.js';
import { createDatabase, dropDatabase, ensurePostgres } from '../postgres.js';
import { ensureRedis } from '../redis.js';
import { runBench } from './processes.js';
import { benchArgs } from './bench-args.js';

const values = benchArgs({
  runs: '5',
  only: undefined,
  write: false,
});
const say = (line: string) => process.stderr.write(`[bench-freeze] ${line}\n`);

interface Figures {
  longestS: number;
  acceptedAgainS: number;
  refused503: number;
  settledS: number;
  accepted: number;
  /** Orders answered 2010 that were sent during the freeze. */
  acceptedDuring: number;
  /** 'yes', or what test/failover's checks found. */
  nothingLost: string;
}

async function figures(run: FailoverRun, probe: Probe): Promise<Figures> {
  const thaw = run.lostForMs;
  const during = run.answers.filter((a) => a.at < thaw && a.at + a.ms > 0);
  const againAt = run.answers
    .filter((a) => a.at >= thaw && a.svcStatus.includes(2010))
    .map((a) => a.at + a.ms - thaw);
  let nothingLost = 'yes';
  // The time to serve again is a figure here, not a check: the bound given is only a backstop.
  await expectNothingLost(probe, run, thaw + 60_000).catch((err: Error) => {
    nothingLost = err.message.split('\n').slice(0, 6).join(' ').slice(0, 400);
  });
  return {
    longestS: Math.max(0, ...during.map((a) => a.ms)) / 1000,
    acceptedAgainS: Math.min(...againAt) / 1000,
    refused503: run.answers.filter((a) => a.at >= 0 && a.status === 503).length,
    settledS: (run.settledMs - thaw) / 1000,
    accepted: run.accepted.size,
    acceptedDuring: run.answers.filter((a) => a.at >= 0 && a.at < thaw && a.svcStatus.includes(2010)).length,
    nothingLost,
  };
}

/** Freezes `proxy` FREEZE_MS, then lets bytes pass again (those held first, in order). */
const freeze = (proxy: TcpProxy) => async () => {
  proxy.freeze();
  await sleep(FREEZE_MS);
  proxy.pass();
};

const settings = (dir: string) => ({ ...runSettings(dir, 'bz'), ...FAULT_ENV, ...CLOCK_ENV });

async function redisRun(redisUrl: string): Promise<Figures> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-freeze-'));
  const redis = await proxied(redisUrl);
  try {
    return await figuresOfLoss({ ...settings(dir), REDIS_URL: redis.url }, freeze(redis.proxy), figures);
  } finally {
    redis.proxy.pass();
    await redis.proxy.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function storeRun(postgresUrl: string, redisUrl: string, n: number): Promise<Figures> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-freeze-'));
  const name = `bench_freeze_${n}_${crypto.randomBytes(3).toString('hex')}`;
  const direct = await createDatabase(postgresUrl, name);
  const store = await proxied(direct);
  try {
    const env = {
      ...settings(dir),
      // As in test/integration/frozen-store.test.ts: more callers than connections.
      DB_POOL_SIZE: '4',
      SECRETS_KEY: crypto.randomBytes(32).toString('hex'),
      REDIS_URL: redisUrl,
    };
    // Every process reaches the store through the proxy; the probe that judges the run goes directly.
    return await figuresOfLoss({ ...env, DATABASE_URL: store.url }, freeze(store.proxy), figures, {
      ...env,
      DATABASE_URL: direct,
    });
  } finally {
    store.proxy.pass();
    await store.proxy.close();
    await dropDatabase(postgresUrl, name).catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function repeat(runs: number, label: string, run: (n: number) => Promise<Figures>) {
  const all: Figures[] = [];
  for (let i = 1; i <= runs; i++) {
    all.push(await run(i));
    say(`${label} run ${i}: ${JSON.stringify(all.at(-1))}`);
  }
  return all;
}

const uptime = () =>
  execFileSync('uptime', { encoding: 'utf8' })
    .trim()
    .replace(/^.*load average:\s*/, '');

type Result = Summary<Figures>;

function report(results: Result[], runs: number, loads: [string, string]): string {
  const s = (x: number) => `${x.toFixed(2)} s`;
  const pair = (f: Spread, unit: (x: number) => string) => `${unit(f.median)} / ${unit(f.worst)}`;
  const rows = results.map(
    (r) =>
      `| ${r.case} | ${pair(r.longestS, s)} | ${pair(r.acceptedAgainS, s)} | ${pair(r.refused503, String)} | ` +
      `${pair(r.settledS, s)} | ${r.each.filter((e) => e.nothingLost === 'yes').length} of ${r.runs} |`,
  );
  const each = results.map(
    (r) =>
      `- ${r.case.split(' ')[0]} each run (longest, accepted again, 503s, settled, orders accepted, of them during the freeze): ` +
      r.each
        .map(
          (e) =>
            `${s(e.longestS)}, ${s(e.acceptedAgainS)}, ${e.refused503}, ${s(e.settledS)}, ${e.accepted}, ${e.acceptedDuring}`,
        )
        .join('; ') +
      '.',
  );
  const lost = results.flatMap((r) =>
    r.each.filter((e) => e.nothingLost !== 'yes').map((e) => `- ${r.case.split(' ')[0]}: ${e.nothingLost}`),
  );
  return [
    `Command: \`node --import tsx scripts/bench/freeze.ts --runs ${runs} --write\` (on the shared 2-core machine while other work ran: \`uptime\` load average ${loads[0]} before, ${loads[1]} after). Each run starts a web, a worker and a clock from source on private servers (free ports) and the load of \`test/failover\` (six callers in turn: scarce and plentiful real orders with \`Prefer: respond-async\`, dry runs, gets, searches; each request retried every 100 ms with its own \`Svc-RequestId\` until answered below 500); after 3 s the link is frozen ${FREEZE_MS / 1000} s through a TCP proxy (\`test/helpers/tcp-proxy.ts\`: the connections stay open, no byte passes either way), then thawed. The settings of \`test/integration/frozen-*.test.ts\`: \`ATTEMPT_LEASE_S=10\`, \`QUEUED_STALE_AFTER_S=2\`, \`WORKER_CONCURRENCY=4\`, reconciliation every second; (b) \`DB_POOL_SIZE=4\`.`,
    '',
    '"Longest": the longest request in flight at some time of the freeze. "Accepted again": from the thaw until an order sent after it is answered 2010. "503s": requests answered 503 / 5030 from the freeze on (retries counted). "Settled": from the thaw until every accepted order is settled. "Nothing lost": what `test/failover` asserts held (no process exited, no answer but 503 / 5030 at 5xx, no 4xx, one order per request id and the one its caller was given, no item FAILED, stock and every payment exact).',
    '',
    'With Redis frozen, orders are accepted through the freeze (the lockout and rate-limit checks fail open, an order is stored and enqueued once Redis answers again, by reconciliation), so (a) "Settled" includes working off the orders accepted during the freeze; with the store frozen, orders are answered 503 / 5030 meanwhile, but for a few at its edges.',
    '',
    '| Case | Longest, median / worst | Accepted again, median / worst | 503s, median / worst | Settled, median / worst | Nothing lost |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    ...each,
    ...lost,
  ].join('\n');
}

async function main() {
  const runs = Number(values.runs);
  const loadBefore = uptime();
  const results: Result[] = [];
  const redis = await ensureRedis();
  try {
    if (values.only !== 'store') {
      const all = await repeat(runs, 'redis', () => redisRun(redis.url));
      results.push(summary('(a) Redis link frozen (SQLite store)', all));
    }
    if (values.only !== 'redis') {
      const postgres = await ensurePostgres();
      try {
        const all = await repeat(runs, 'store', (n) => storeRun(postgres.url, redis.url, n));
        results.push(summary('(b) PostgreSQL store link frozen', all));
      } finally {
        await postgres.stop();
      }
    }
  } finally {
    await redis.stop();
  }
  const body = report(results, runs, [loadBefore, uptime()]);
  process.stdout.write(`${JSON.stringify({ results }, null, 2)}\n\n${body}\n`);
  if (values.write) writeSection('Frozen links', body);
}

runBench(main, { exitWhenDone: true });
