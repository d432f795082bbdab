// How long the operator commands take to start and finish, beside `npm run` of a script that is only
// `node -e 0`, alternating the commands round by round; medians. `client:create` runs on a
// fresh SQLite file (migrated by a first, unmeasured run). Writes the "Command start times" section of BENCHMARKS.md.
//   node --import tsx scripts/bench/cli-start.ts [rounds=7] [--write]
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { printSection } from './benchmarks-file.js';
import { ROOT } from './processes.js';

const args = parseArgs({
  options: { write: { type: 'boolean', default: false } },
  allowPositionals: true,
});
const ROUNDS = Number(args.positionals[0] ?? 7);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-cli-'));
fs.writeFileSync(
  path.join(dir, 'package.json'),
  JSON.stringify({ private: true, scripts: { noop: 'node -e 0' } }),
);
const env: NodeJS.ProcessEnv = { ...process.env, DB_PATH: path.join(dir, 'orders.db') };
delete env.DATABASE_URL;
delete env.REDIS_URL;

const commands: [string, string[], string][] = [
  ['`npm run` of `node -e 0` (the no-op)', ['run', '--silent', 'noop'], dir],
  ['`npm run admin -- --help`', ['run', '--silent', 'admin', '--', '--help'], ROOT],
  [
    '`npm run admin -- client:create` (SQLite)',
    ['run', '--silent', 'admin', '--', 'client:create', '--name', 'bench'],
    ROOT,
  ],
  ['`npm run call -- --help`', ['run', '--silent', 'call', '--', '--help'], ROOT],
];

function timed(npmArgs: string[], cwd: string): number {
  const started = process.hrtime.bigint();
  const run = spawnSync('npm', npmArgs, { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
  if (run.status !== 0) throw new Error(`npm ${npmArgs.join(' ')}: exit ${run.status}\n${run.stderr}`);
  return Number(process.hrtime.bigint() - started) / 1e9;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

execFileSync('bash', [path.join(ROOT, 'scripts/build.sh'), '--if-stale'], { stdio: 'inherit' });
for (const [, npmArgs, cwd] of commands) timed(npmArgs, cwd); // warm: build checked, database migrated
const times = commands.map(() => [] as number[]);
for (let round = 0; round < ROUNDS; round++)
  commands.forEach(([, a, cwd], i) => times[i]!.push(timed(a, cwd)));
fs.rmSync(dir, { recursive: true, force: true });

const noop = median(times[0]!);
const rows = commands.map(([name], i) => {
  const m = median(times[i]!);
  return `| ${name} | ${m.toFixed(2)} s | ${i === 0 ? '' : `+${(m - noop).toFixed(2)} s`} |`;
});
const section = [
  `Command: \`node --import tsx scripts/bench/cli-start.ts ${ROUNDS}\` (${os.cpus().length} cores, compiled commands in dist/, ${ROUNDS} alternating rounds, medians)`,
  '',
  '| command | wall time | beyond the no-op |',
  '| --- | --- | --- |',
  ...rows,
  '',
  'Aims: `--help` at most 0.15 s beyond the no-op, `client:create` at most 0.25 s. The admin CLI loads',
  "a command's module (and the configuration and store it uses) only when that command runs (src/cli/admin.commands.ts).",
].join('\n');
printSection('Command start times', section, args.values.write);
