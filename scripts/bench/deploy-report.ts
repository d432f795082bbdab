// The "Deploy: stop and ready" section of BENCHMARKS.md from the runs of scripts/bench/deploy.ts.
import type { DeployRun, Step } from '../../test/helpers/rolling-deploy.js';
import { median } from './fault-runs.js';
import type { StoreKind } from './stores.js';

type Kind = 'worker' | 'clock' | 'web';
const KINDS: Kind[] = ['worker', 'clock', 'web'];

/** What one rolling restart measured: each process's stop and its replacement's start, and what callers saw. */
export interface DeployFigures {
  steps: { kind: Kind; stopMs: number; readyMs: number }[];
  /** Requests unanswered or answered wrong, 4xx, and 5xx but 503 5030 with Retry-After. */
  errors: number;
  /** Answers 503 5030 with Retry-After: retried by their callers with the same request id. */
  retried503: number;
  accepted: number;
  allExited0: boolean;
}

const kindOf = (step: Step): Kind => step.name.split(' ')[0] as Kind;

/** A run's figures; a roll that stopped at a replacement that would not start is an error of the bench. */
export function deployFigures(run: DeployRun): DeployFigures {
  if (run.refused) throw new Error(`${run.refused.name} would not start:\n${run.refused.output}`);
  const retried = (a: DeployRun['answers'][number]) =>
    a.status === 503 && a.svcStatus.includes(5030) && Boolean(a.retryAfter);
  const wrong = run.answers.filter((a) => a.status >= 400 && !retried(a));
  return {
    steps: run.steps.map((s) => ({ kind: kindOf(s), stopMs: s.stopMs, readyMs: s.readyMs ?? NaN })),
    errors: run.failures.length + wrong.length,
    retried503: run.answers.filter(retried).length,
    accepted: run.accepted.size,
    allExited0: [...run.steps.map((s) => s.exitCode), ...run.finalExits.map((e) => e.code)].every(
      (c) => c === 0,
    ),
  };
}

/** "median (min–max)" in ms over every process of `kind` in every run. */
function spread(runs: DeployFigures[], kind: Kind, of: 'stopMs' | 'readyMs'): string {
  const xs = runs.flatMap((r) => r.steps.filter((s) => s.kind === kind).map((s) => s[of]));
  return `${Math.round(median(xs))} (${Math.min(...xs)}–${Math.max(...xs)})`;
}

const STORE_NAME: Record<StoreKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };

export function deploySection(
  stores: { kind: StoreKind; runs: DeployFigures[] }[],
  run: { command: string; setting: string; drainMs: number },
): string {
  const perRun = (runs: DeployFigures[], f: (r: DeployFigures) => string | number) => runs.map(f).join(', ');
  const rows = stores.map(({ kind, runs }) => {
    const times = KINDS.flatMap((k) => [spread(runs, k, 'stopMs'), spread(runs, k, 'readyMs')]);
    const exits = runs.every((r) => r.allExited0)
      ? 'yes'
      : perRun(runs, (r) => (r.allExited0 ? 'yes' : 'no'));
    return `| ${STORE_NAME[kind]} | ${times.join(' | ')} | ${perRun(runs, (r) => r.errors)} | ${perRun(runs, (r) => r.retried503)} | ${perRun(runs, (r) => r.accepted)} | ${exits} |`;
  });
  return [
    `Command: \`${run.command}\` (${run.setting})`,
    '',
    `A rolling restart of this tree under the load of the deploy tests (test/helpers/rolling-deploy.ts, as test/deploy/rolling-restart.test.ts runs it: two webs behind a TCP balancer that asks each \`/readyz\` every second, two workers, a clock; six callers retrying with their request ids): each process in turn sent SIGTERM, waited for, and started again. "stop" is SIGTERM to exit, a web's including its drain (\`SHUTDOWN_DRAIN_MS\`, the default ${run.drainMs} ms: docs/operating.md, Deploying a release); "ready" is the replacement's spawn (its Procfile command, compiled, as operators run it) to its \`/readyz\` answering 200 for a web, to its ready line for a worker or the clock. Milliseconds, median (min–max) over every process of the kind in every run; errors are what a caller would see (no answer, a wrong one, 4xx, 5xx but 503 with Retry-After), per run.`,
    '',
    '| store | worker stop | worker ready | clock stop | clock ready | web stop | web ready | errors | 503 retried | orders accepted | all exited 0 |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...rows,
  ].join('\n');
}
