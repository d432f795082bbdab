// The "Dry run and get" section of BENCHMARKS.md from the rounds of scripts/bench/dry-run.ts.

export interface Round {
  rps: number;
  p50: number;
  p99: number;
  failures: number;
  cpuUsPerRequest: number;
}

export interface HotPathRounds {
  dryRun: Round[];
  bareDryRun: Round[];
  get: Round[];
  bareGet: Round[];
  /** The same two requests to another checkout's web (--checkout), in the same rounds. */
  beforeDryRun?: Round[];
  beforeGet?: Round[];
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** The median of each measure over the rounds, failures summed. */
function summary(rounds: Round[]): Round {
  return {
    rps: median(rounds.map((r) => r.rps)),
    p50: median(rounds.map((r) => r.p50)),
    p99: median(rounds.map((r) => r.p99)),
    failures: rounds.reduce((sum, r) => sum + r.failures, 0),
    cpuUsPerRequest: median(rounds.map((r) => r.cpuUsPerRequest)),
  };
}

const row = (name: string, r: Round) =>
  `| ${name} | ${r.rps.toFixed(0)} | ${r.cpuUsPerRequest.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.failures} |`;

function ratios(what: string, ours: Round, bare: Round, aim: number): string {
  const cpuRatio = bare.cpuUsPerRequest / ours.cpuUsPerRequest;
  return (
    `- ${what}: **${(ours.rps / bare.rps).toFixed(2)}** of the bare handler's rate (aim: at least ${aim}); ` +
    `by CPU per request it costs ${(1 / cpuRatio).toFixed(2)}× the bare handler, i.e. **${cpuRatio.toFixed(2)}** ` +
    'of its rate on a core of its own.'
  );
}

export function hotPathSection(
  rounds: HotPathRounds,
  run: { command: string; setting: string; webPeakRssMiB: number },
): string {
  const [dryRun, bareDryRun, get, bareGet] = [
    rounds.dryRun,
    rounds.bareDryRun,
    rounds.get,
    rounds.bareGet,
  ].map(summary) as [Round, Round, Round, Round];
  const beforeDryRun = rounds.beforeDryRun && summary(rounds.beforeDryRun);
  const beforeGet = rounds.beforeGet && summary(rounds.beforeGet);
  const before = beforeDryRun && beforeGet;
  return [
    `Command: \`${run.command}\` (${run.setting})`,
    '',
    'A signed dry run of two copies of one listing (auth, HMAC over the body, zod validation, catalog and card reads,',
    'lockout checks in Redis, pricing with conversion and tax) against a bare Express handler that parses the same',
    'body; a signed `GET /v1/orders/{id}` of one order (auth, one store read, the response) against a bare handler',
    'that answers a small JSON body. Rate limiting is off for this run (one key at thousands of requests per second',
    'would be refused, as it should).',
    '',
    '| server | requests/s | CPU µs per request | p50 ms | p99 ms | errors or non-2xx |',
    '|---|---|---|---|---|---|',
    row('service dry run', dryRun),
    row('bare Express + JSON parse', bareDryRun),
    row('service get', get),
    row('bare Express GET', bareGet),
    ...(before ? [row('before: service dry run', beforeDryRun), row('before: service get', beforeGet)] : []),
    '',
    ratios('Dry run', dryRun, bareDryRun, 0.7),
    ratios('Get', get, bareGet, 0.85),
    ...(before
      ? [
          ratios('Before: dry run', beforeDryRun, bareDryRun, 0.7),
          ratios('Before: get', beforeGet, bareGet, 0.85),
        ]
      : []),
    `- The web's peak RSS (VmHWM) over the run: ${run.webPeakRssMiB} MiB.`,
    '',
    'CPU per request is read from /proc for each server process and is the steadier of the two on a shared machine;',
    'requests/s also depends on how the two cores are shared with autocannon and Redis.',
  ].join('\n');
}
