// What the seconds-scale fault benchmarks share (scripts/bench/failover.ts, scripts/bench/freeze.ts): the settings
// of a run, one run of the failover load (test/helpers/failover-load.ts) through a loss, and the median and worst
// of each figure over the runs.
import crypto from 'node:crypto';
import path from 'node:path';
import { openProbe } from '../../test/helpers/test-store.js';
import { runThroughFailover, type FailoverRun } from '../../test/helpers/failover-load.js';
import type { Probe } from '../../test/helpers/store.probe.js';
import { freePort } from '../redis.js';

/** A run's settings: its own queue prefix and SQLite file in `dir` (unused when DATABASE_URL is given). */
export function runSettings(dir: string, prefix: string): Record<string, string> {
  return {
    QUEUE_PREFIX: `${prefix}${crypto.randomBytes(4).toString('hex')}`,
    DB_PATH: path.join(dir, 'orders.db'),
    LOG_PRETTY: 'false',
    RATE_LIMIT_PER_S: '0',
    RECONCILE_CRON: '*/2 * * * * *',
    QUEUED_STALE_AFTER_S: '5',
  };
}

/**
 * One run of the load through `lose` on `env`, its figures taken by `figures` with a probe on the store of
 * `probeEnv` (`env` unless the service reaches its store through something the run takes away).
 */
export async function figuresOfLoss<F>(
  env: Record<string, string>,
  lose: () => Promise<void>,
  figures: (run: FailoverRun, probe: Probe) => Promise<F> | F,
  probeEnv: Record<string, string> = env,
): Promise<F> {
  const probe = openProbe(probeEnv);
  try {
    const run = await runThroughFailover({ env, port: await freePort(), probe, lose });
    if (run.exits.some((exit) => exit !== null)) throw new Error(`a process exited:\n${run.tails()}`);
    return await figures(run, probe);
  } finally {
    await probe.close();
  }
}

export const median = (xs: number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

type NumericKeys<F> = { [K in keyof F]: F[K] extends number ? K : never }[keyof F];
export type Spread = { median: number; worst: number };
export type Summary<F> = { case: string; runs: number; each: F[] } & Record<NumericKeys<F>, Spread>;

/** The median and worst (largest) of each numeric figure over `runs`, and every run's figures. */
export function summary<F extends object>(name: string, runs: F[]): Summary<F> {
  const numeric = Object.keys(runs[0] ?? {}).filter(
    (key) => typeof (runs[0] as Record<string, unknown>)[key] === 'number',
  );
  const of = Object.fromEntries(
    numeric.map((key) => {
      const xs = runs.map((r) => (r as Record<string, number>)[key]!);
      return [key, { median: median(xs), worst: Math.max(...xs) }];
    }),
  ) as Record<NumericKeys<F>, Spread>;
  return { case: name, runs: runs.length, ...of, each: runs };
}
