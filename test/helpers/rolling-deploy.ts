// A rolling deploy as an operator runs one (docs/operating.md, Deploying a release): two webs behind a balancer
// (test/helpers/balancer.ts), two workers and a clock, on one store and one Redis, each run from a release's
// directory (this tree, or a previous release: test/helpers/previous-release.ts), and the load of test/failover
// (six callers: real orders, synchronous and `Prefer: respond-async`, dry runs, gets, searches, each retried with
// its Svc-RequestId) sent through the balancer all along. Each process in turn is sent SIGTERM, waited for, and
// replaced by one of the target release, which must be ready (a web: live in the balancer) before the next is
// stopped. What the callers and the store saw is returned for the test to judge (expectUnharmed).
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, inject } from 'vitest';
import { readProcfile } from '../../scripts/procfile.js';
import { freePort } from '../../scripts/redis.js';
import { startBalancer } from './balancer.js';
import { configFileOf } from './previous-release.js';
import {
  allSettled,
  expectFindingsExact,
  LOAD_LISTINGS,
  MAX_PROCESS_ATTEMPTS,
  startLoad,
  storeFindings,
  type Answer,
  type Caller,
  type Failure,
} from './failover-load.js';
import { VENDORS } from './fixtures.js';
import { createSigningClient } from './signed-client.js';
import type { Probe } from './store.probe.js';
import { spawnProcess, stopChild } from './test-service.js';
import { openProbe, testStoreEnv, type TestStoreEnv } from './test-store.js';
import { collect, sleep, until } from './wait.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** This tree, as a release to run. */
export const THIS_TREE = ROOT;

type Role = 'web' | 'worker' | 'clock';

const ENTRY: Record<Role, { entry: string; ready: string }> = {
  web: { entry: 'src/server.ts', ready: 'web listening' },
  worker: { entry: 'workers/order.worker.ts', ready: 'worker ready' },
  clock: { entry: 'jobs/clock.ts', ready: 'clock ready' },
};

/** The processes, in the order they are rolled: workers (the consumers) first, then the clock, then the webs. */
const PROCESSES: { name: string; role: Role }[] = [
  { name: 'worker 1', role: 'worker' },
  { name: 'worker 2', role: 'worker' },
  { name: 'clock', role: 'clock' },
  { name: 'web 1', role: 'web' },
  { name: 'web 2', role: 'web' },
];

/** Longer than two of the balancer's health checks (one a second): it has seen the web draining by then. */
const DRAIN_MS = 3000;

interface Running {
  name: string;
  role: Role;
  release: string;
  child: ChildProcess;
  printed: string[];
}

/** One process replaced: how long its stop and its replacement's start took, and how it exited. */
export interface Step {
  name: string;
  /** Whether the process stopped was of a release whose web drains (SHUTDOWN_DRAIN_MS). */
  drains: boolean;
  /** ms from SIGTERM to its exit. */
  stopMs: number;
  exitCode: number | null;
  /**
   * ms from the replacement's spawn to ready (a web: its own `/readyz` answers 200, asked every 20 ms; a worker or
   * the clock: its ready line); absent when it refused to start. The roll goes on once a web is live in the balancer.
   */
  readyMs?: number;
}

export interface DeployRun {
  /** The answers the callers got, each stamped with the step it was sent in (`before`, `stop web 1`, … `after`). */
  answers: Answer<string>[];
  /** Requests that got no answer, and wrong answers. */
  failures: Failure<string>[];
  /** Svc-RequestId → the order it was given. */
  accepted: Map<string, number>;
  steps: Step[];
  /** The first replacement that would not start, and what it said; the roll stops there. */
  refused?: { name: string; output: string };
  /** Every process's exit code, when stopped at the end (the replaced ones are in `steps`). */
  finalExits: { name: string; code: number | null }[];
  findings: Awaited<ReturnType<typeof storeFindings>>;
  /** The last lines each process printed, the replaced ones included. */
  tails(): string;
  /** The steps and what the balancer saw (backends out and in, connections ended unanswered), in time order. */
  timeline: string[];
}

export interface DeployOptions {
  /** The release every process runs first, and the one each is replaced by (directories). */
  from: string;
  to: string;
  /** How long the load runs before the first stop, and after the last start. */
  beforeMs?: number;
  afterMs?: number;
  /** SHUTDOWN_DRAIN_MS of every process (of a release that has it); 0 shows what callers see without a drain. */
  drainMs?: number;
  /** The run's store, given its directory (a benchmark's); by default the vitest project's (testStoreEnv). */
  store?: (dir: string) => Promise<TestStoreEnv>;
  /** The Redis of the run (a benchmark's); by default the test run's. */
  redisUrl?: string;
  /**
   * Every process as its release's Procfile runs it, compiled (each release's dist/ built), as operators run a
   * release (a benchmark's); by default from source through tsx, as the tests start them.
   */
  compiled?: boolean;
}

/** Runs one rolling deploy from `from` to `to` under load on a private store of the project's kind. */
export async function rollingDeploy(options: DeployOptions): Promise<DeployRun> {
  const { from, to } = options;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-deploy-'));
  const store = await (options.store ?? testStoreEnv)(dir);
  const env: Record<string, string> = {
    ...store.env,
    REDIS_URL: options.redisUrl ?? inject('redisUrl'),
    QUEUE_PREFIX: `d${crypto.randomBytes(5).toString('hex')}`,
    LOG_PRETTY: 'false',
    RATE_LIMIT_PER_S: '0',
    RECONCILE_CRON: '*/2 * * * * *',
    MAX_PROCESS_ATTEMPTS: String(MAX_PROCESS_ATTEMPTS),
    SHUTDOWN_DRAIN_MS: String(options.drainMs ?? DRAIN_MS),
  };
  const probe: Probe = openProbe(env);
  const processes = new Set<ChildProcess>();
  const webPorts = [await freePort(), await freePort()];
  const balancer = await startBalancer(webPorts);
  const running = new Map<string, Running>();
  const everyProcess: Running[] = [];
  try {
    const callers = await seedWith(from, env, `http://127.0.0.1:${balancer.port}`);
    const start = async (name: string, role: Role, release: string) => {
      const one = await startOne(processes, {
        name,
        role,
        release,
        env,
        port: webPorts[Number(name.at(-1)) - 1]!,
        compiled: options.compiled ?? false,
      });
      everyProcess.push(one);
      return one;
    };
    const first = await Promise.all(PROCESSES.map(({ name, role }) => start(name, role, from)));
    for (const one of first) running.set(one.name, one);
    const tails = () =>
      everyProcess
        .map(
          (p) =>
            `${p.name} (${p.release === ROOT ? 'this tree' : path.basename(p.release)}):\n` +
            p.printed.join('').split('\n').slice(-30).join('\n'),
        )
        .join('\n----\n');
    await until(() => balancer.live().length === 2, 30_000, 'both webs live in the balancer');

    let step = 'before';
    const load = startLoad(callers, () => step, { synchronous: true });
    await sleep(options.beforeMs ?? 2_000);
    const { steps, refused } = await roll({
      running,
      start,
      to,
      from,
      onStep: (now) => {
        step = now;
        balancer.mark(now);
      },
      live: () => balancer.live().length === 2,
      answersReady: (name) => answersReady(webPorts[Number(name.at(-1)) - 1]!),
      closedOn: async (name) => {
        const port = webPorts[Number(name.at(-1)) - 1]!;
        await until(() => balancer.open(port) === 0, 30_000, `${name}'s connections closed`, 5);
        // A turn of the event loop reads the closes the balancer passed on into the callers' sockets, so that no
        // request is sent on one of them after this; then every request sent before has met its close or its answer.
        await new Promise((resolve) => setImmediate(resolve));
        const sent = load.sent();
        await until(
          () => load.endedThrough(sent),
          30_000,
          `the requests sent before ${name} closed ended`,
          5,
        );
      },
    });
    step = 'after';
    await sleep(options.afterMs ?? 2_000);
    await load.stop();
    await allSettled(probe, 90_000, tails);
    const findings = await storeFindings(probe, load.accepted);
    const exits = [...running.values()].map(async (one) => ({
      name: one.name,
      code: await stopChild(one.child),
    }));
    const finalExits = await Promise.all(exits);
    return {
      answers: load.answers,
      failures: load.failures,
      accepted: load.accepted,
      steps,
      refused,
      finalExits,
      findings,
      tails,
      timeline: balancer.events(),
    };
  } finally {
    await Promise.all([...processes].map((child) => stopChild(child, 'SIGKILL')));
    await balancer.close();
    await probe.close();
    await store.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Replaces each process in turn: SIGTERM, its exit, its replacement from `to` started and ready (a web: `live()`
 * again) before the next. A replacement that will not start ends the roll; the process it replaced is started
 * again from `from`, as an operator would.
 */
async function roll(deploy: {
  running: Map<string, Running>;
  start: (name: string, role: Role, release: string) => Promise<Running>;
  from: string;
  to: string;
  onStep: (step: string) => void;
  live: () => boolean;
  answersReady: (name: string) => Promise<boolean>;
  /** Resolves once the web `name` has no connection left open and every caller has seen each of its closes. */
  closedOn: (name: string) => Promise<void>;
}): Promise<Pick<DeployRun, 'steps' | 'refused'>> {
  const { running, start, from, to, onStep } = deploy;
  const steps: Step[] = [];
  for (const { name, role } of PROCESSES) {
    onStep(`stop ${name}`);
    const old = running.get(name)!;
    const drains = hasDrain(old.release);
    const stopping = Date.now();
    const exitCode = await stopChild(old.child);
    const stopMs = Date.now() - stopping;
    // A web that does not drain closes its kept-alive connections as it exits: the step stays until every caller
    // has seen those closes, so that a request they leave unanswered ends in it, where unansweredByUndrained looks.
    if (role === 'web' && !drains) await deploy.closedOn(name);
    onStep(`start ${name}`);
    const starting = Date.now();
    const replacement = await start(name, role, to).catch((err: Error) => err);
    if (replacement instanceof Error) {
      steps.push({ name, drains, stopMs, exitCode });
      running.set(name, await start(name, role, from));
      return { steps, refused: { name, output: replacement.message } };
    }
    running.set(name, replacement);
    if (role === 'web') await until(() => deploy.answersReady(name), 30_000, `${name} ready`, 20);
    const readyMs = Date.now() - starting;
    if (role === 'web') await until(deploy.live, 30_000, `${name} live again`);
    steps.push({ name, drains, stopMs, exitCode, readyMs });
  }
  return { steps };
}

/** Whether the web on `port` answers `GET /readyz` 200 (what the balancer asks, without its 1 s interval). */
async function answersReady(port: number): Promise<boolean> {
  const answer = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
  await answer?.body?.cancel();
  return answer?.status === 200;
}

/** Whether the webs of `release` drain before they stop (releases before this one close at once). */
export function hasDrain(release: string): boolean {
  return fs.readFileSync(path.join(release, configFileOf(release)), 'utf8').includes('SHUTDOWN_DRAIN_MS');
}

/**
 * The requests left unanswered while a web of a release without the drain stopped: it closes its kept-alive
 * connections at once, and a caller that sends on one just then sees it closed (each such request was retried by
 * its caller with its Svc-RequestId and answered). No balancer in TCP mode can prevent it; this release's drain does.
 */
export function unansweredByUndrained(run: DeployRun): Failure<string>[] {
  const undrained = new Set(
    run.steps.filter((s) => s.name.startsWith('web') && !s.drains).map((s) => `stop ${s.name}`),
  );
  // By when the connection closed, not when the request was sent: one sent just before the stop (the step's
  // name changes as SIGTERM is sent) may still be unread in the socket, which the web then closes as idle.
  return run.failures.filter((f) => f.kind === 'unanswered' && undrained.has(f.endedAt ?? f.at));
}

/** Failures counted by step and kind, with the first of each, so that hundreds read in a few lines. */
function summary(failures: Failure<string>[]): string[] {
  const groups = new Map<string, Failure<string>[]>();
  for (const f of failures)
    groups.set(`${f.at}, ${f.kind}`, [...(groups.get(`${f.at}, ${f.kind}`) ?? []), f]);
  return [...groups].map(([key, all]) => `${key}: ${all.length}, first ${all[0]!.what}: ${all[0]!.message}`);
}

/** Starts one process of `release`; a web on its slot's port. Resolves once it says it is ready. */
async function startOne(
  processes: Set<ChildProcess>,
  {
    name,
    role,
    release,
    env,
    port,
    compiled,
  }: {
    name: string;
    role: Role;
    release: string;
    env: Record<string, string>;
    port: number;
    compiled: boolean;
  },
): Promise<Running> {
  const { entry, ready } = ENTRY[role];
  const own = role === 'web' ? { ...env, PORT: String(port), HOST: '127.0.0.1' } : env;
  const nodeArgs = compiled ? readProcfile(release)[role] : undefined;
  if (compiled && !nodeArgs) throw new Error(`${release}: its Procfile has no ${role}`);
  // Five processes start (from source unless compiled) on a machine that may be busy with other test files.
  const child = await spawnProcess(processes, entry, own, ready, {
    root: release,
    readyMs: 90_000,
    nodeArgs,
  });
  const printed: string[] = [];
  for (const stream of [child.stdout!, child.stderr!])
    stream.on('data', (chunk: Buffer) => printed.push(chunk.toString()));
  return { name, role, release, child, printed };
}

/** The catalog and the callers, written by `release`'s own code (so that its migrations make the schema). */
async function seedWith(release: string, env: Record<string, string>, baseUrl: string): Promise<Caller[]> {
  const seed = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(ROOT, 'test/helpers/release-seed.ts'), release, '6'],
    {
      cwd: release,
      env: {
        ...process.env,
        ...env,
        SEED_CATALOG: JSON.stringify({ vendors: VENDORS, listings: LOAD_LISTINGS }),
      },
    },
  );
  const run = await collect(seed);
  if (run.code !== 0) throw new Error(`seeding with ${release} failed:\n${run.stderr}`);
  const made = JSON.parse(run.stdout) as { accessKey: string; secretKey: string; ccToken: string }[];
  return made.map(({ accessKey, secretKey, ccToken }) => ({
    client: createSigningClient({ baseUrl, accessKey, secretKey }),
    ccToken,
  }));
}

/**
 * What a client of a rolling deploy must observe: no request unanswered (no reset, no connection closed), no wrong
 * answer, nothing 5xx but 503 5030 with Retry-After, no 4xx; one order per request id (the one its caller was
 * given), none FAILED, stock and every payment exact; every process stopped exited 0; and, unless told the roll
 * was refused (`rolled: false`), every process replaced.
 */
export function expectUnharmed(run: DeployRun, { rolled = true }: { rolled?: boolean } = {}): void {
  const excused = new Set(unansweredByUndrained(run));
  expect(
    summary(run.failures.filter((f) => !excused.has(f))),
    `${run.timeline.join('\n')}\n${run.tails()}`,
  ).toEqual([]);
  const refused = run.answers.filter((a) => a.status >= 500);
  expect(refused.filter((a) => a.status !== 503 || !a.svcStatus.includes(5030) || !a.retryAfter)).toEqual([]);
  expect(run.answers.filter((a) => a.status >= 400 && a.status < 500)).toEqual([]);
  expect(run.steps.map((s) => [s.name, s.exitCode])).toEqual(run.steps.map((s) => [s.name, 0]));
  expect(
    run.finalExits.filter((e) => e.code !== 0),
    run.tails(),
  ).toEqual([]);
  expectFindingsExact(run.findings, run.accepted, run.answers);
  // Every process was replaced, and orders were still accepted after the roll.
  if (rolled) {
    expect(run.refused).toBeUndefined();
    expect(run.steps.map((s) => s.name)).toEqual(PROCESSES.map((p) => p.name));
  }
  expect(run.answers.some((a) => a.at === 'after' && a.status === 200 && a.what === 'order')).toBe(true);
}
