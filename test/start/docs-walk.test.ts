// Every shell block of the docs (README.md, docs/*.md, client/README.md, BENCHMARKS.md) works as printed: it is
// run here, line by line, or walked by the test that runs it (the README's "Trying it" and operating.md's admin
// CLI by test/start/readme-walk.test.ts), or named below with the reason it cannot run on a test machine and the
// test that runs the same steps on private servers. A block none of these name fails the test, as does a name
// whose block the docs no longer have. And every link between the docs reaches a file and a heading that exist.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ROOT,
  WALKED_SECTIONS,
  anchorOf,
  anchorsOf,
  docFiles,
  readDoc,
  shellBlocks,
  type ShellBlock,
} from '../helpers/doc-blocks.js';
import { collect } from '../helpers/wait.js';

type Fate =
  /** Each line is run here with bash, from the repository's root, and must exit 0. */
  | { run: true }
  /** Another test runs these very lines (or their steps on private servers): its file must hold `holds`. */
  | { walkedBy: string; holds: string }
  /** Not run on a test machine, for this reason. */
  | { notRun: string };

/** Blocks outside the walked sections, by `file: first line`. */
const BLOCKS: Record<string, Fate> = {
  'README.md: npm start   # installs what is missing, starts Redis (or uses REDIS_URL), web, worker and clock with demo data':
    {
      // Its second line, npm test, is the whole suite: tens of minutes, what the lead runs before a merge.
      walkedBy: 'test/start/npm-start.test.ts',
      holds: "spawn('npm', ['start']",
    },
  'docs/developing.md: npx vitest run --project unit test/unit/money.test.ts                  # one unit test file':
    {
      run: true,
    },
  'docs/operating.md: REDIS_SENTINELS=10.0.0.1:26379,10.0.0.2:26379,10.0.0.3:26379': {
    // Three Sentinels at those addresses are a deployment's; the failover test starts three of its own and gives
    // every process these settings.
    walkedBy: 'test/failover/failover.test.ts',
    holds: 'REDIS_SENTINEL_MASTER',
  },
  "docs/operating.md: DATABASE_URL='postgres://svc:PASSWORD@db1:5432,db2:5432/orders?target_session_attrs=read-write'":
    {
      // db1 and db2 are a deployment's; the failover test starts a primary and a synchronous standby of its own
      // and names both so.
      walkedBy: 'test/failover/failover.test.ts',
      holds: 'target_session_attrs=read-write',
    },
  'docs/operating.md: apt-get install -y prometheus               # prometheus and promtool': {
    // Copies into /etc and a Prometheus for good are the operator's; these tests install the same package when
    // root, check and test the same files with promtool, and run the server on a free port with a private folder.
    walkedBy: 'test/start/prometheus.test.ts',
    holds: '--web.listen-address',
  },
  'docs/operating.md: export OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318   # spans go to http://collector:4318/v1/traces':
    {
      // collector:4318 is a deployment's collector; the traces test runs every process against an OTLP/HTTP
      // receiver of its own through these variables.
      walkedBy: 'test/integration/traces.test.ts',
      holds: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    },
  "client/README.md: cd client && npm pack        # in the service's repository: writes book-order-client-0.1.0.tgz":
    {
      // The tarball installed in a project of the test's own (/your/project stands for the reader's).
      walkedBy: 'test/integration/client-pack.test.ts',
      holds: "'pack'",
    },
  'client/README.md: export API_URL=https://orders.example.com ACCESS_KEY=AK... SECRET_KEY=sk_... CC_TOKEN=cc_...':
    {
      // The example service and keys are the reader's; the test runs every example with these four variables set
      // to a service and client of its own.
      walkedBy: 'test/integration/client-pack.test.ts',
      holds: 'CC_TOKEN',
    },
};

const inWalkedSection = (block: ShellBlock) =>
  WALKED_SECTIONS.some(([file, heading]) => block.file === file && block.section === heading);

function allBlocks(): ShellBlock[] {
  return docFiles().flatMap((file) => shellBlocks(file));
}

/** The environment of a command a reader types: none of this run's vitest or test-store settings. */
function readerEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env))
    if (!/^(VITEST|TEST_|__VITEST)/.test(name) && name !== 'NODE_OPTIONS') env[name] = value;
  return env;
}

describe('the shell blocks of the docs', () => {
  it('when a doc holds a shell block, then it is walked, run here, or named with the reason it is not', () => {
    const blocks = allBlocks();
    const keys = new Set(blocks.map((block) => block.key));
    for (const block of blocks) {
      if (inWalkedSection(block)) continue;
      expect(
        BLOCKS[block.key],
        `an unaccounted shell block of ${block.file}: ${block.lines.join('\n')}`,
      ).toBeDefined();
    }
    for (const key of Object.keys(BLOCKS)) expect(keys, 'a block the docs no longer have').toContain(key);
    for (const fate of Object.values(BLOCKS))
      if ('walkedBy' in fate) {
        expect(fs.existsSync(path.join(ROOT, fate.walkedBy)), fate.walkedBy).toBe(true);
        expect(readDoc(fate.walkedBy), `${fate.walkedBy} holds ${fate.holds}`).toContain(fate.holds);
      }
    // Each walked section exists and has its blocks.
    for (const [file, heading] of WALKED_SECTIONS)
      expect(
        blocks.some((block) => block.file === file && block.section === heading),
        `${file}: ${heading}`,
      ).toBe(true);
  });

  it('when a block is marked to run here, then each of its lines exits 0 as printed', async () => {
    const runnable = allBlocks().filter((block) => {
      const fate = BLOCKS[block.key];
      return fate !== undefined && 'run' in fate;
    });
    expect(runnable.length).toBeGreaterThan(0);
    for (const block of runnable)
      for (const line of block.lines.filter((text) => text.trim() !== '')) {
        const run = await collect(spawn('bash', ['-c', line], { cwd: ROOT, env: readerEnv() }));
        expect(
          run.code,
          `${block.file}: ${line}\n${run.stdout.slice(-2000)}\n${run.stderr.slice(-2000)}`,
        ).toBe(0);
      }
  }, 900_000);
});

describe('the links between the docs', () => {
  it('when a doc links to a file or a heading, then it exists', () => {
    for (const file of docFiles()) {
      const text = readDoc(file).replace(/^```[\s\S]*?^```/gm, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue; // https:, mailto:
        const [linked, anchor] = target!.split('#') as [string, string | undefined];
        const resolved =
          linked === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), linked));
        expect(fs.existsSync(path.join(ROOT, resolved)), `${file} links to ${target}`).toBe(true);
        if (anchor !== undefined && resolved.endsWith('.md'))
          expect(anchorsOf(resolved), `${file} links to ${target}`).toContain(anchor);
      }
    }
  });

  it('when a heading is made an anchor, then it is as GitHub makes it', () => {
    expect(anchorOf('Load (PostgreSQL), compiled')).toBe('load-postgresql-compiled');
    expect(anchorOf('How it works, in detail')).toBe('how-it-works-in-detail');
    expect(anchorOf("Callers' shape")).toBe('callers-shape');
  });
});
