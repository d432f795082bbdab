// The README's "Trying it" and docs/operating.md's "The admin CLI", walked as a new user walks them: every
// `npm run --silent call|admin` line of their code blocks, run in order against one `npm start` (SQLite,
// WEBHOOK_ALLOW_PRIVATE=true as the webhook steps say), with the README's own receiver running. A line fails the
// test when it exits non-zero or prints other than its comment says (`# {"clientId","accessKey","secretKey"}`: a
// JSON object with exactly those keys). test/start/docs-walk.test.ts accounts for every other shell block.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRuntimeFile, runtimeFilePath, type RuntimeFile } from '../../src/cli/runtime-file.js';
import { freePort } from '../../scripts/redis.js';
import { ROOT, WALKED_SECTIONS, sectionBlocks } from '../helpers/doc-blocks.js';
import { holdStartLock } from '../helpers/start-lock.js';
import { collect, operatorEnv, until, type CliRun } from '../helpers/wait.js';

/**
 * Lines of the walked sections that are not run here, each with the reason. A line not run and not listed fails
 * the test, as does a listed line the docs no longer have.
 */
const NOT_RUN: Record<string, string> = {
  'admin -- secrets:rotate --new-key-file new.key':
    "re-seals the running service's keys under a key file made as operating.md, Keys and secrets says; " +
    'test/integration/secrets-rotate.test.ts runs it against processes on the old and the new key',
  'admin -- secrets:rotate [--batch-size 500]':
    'needs processes restarted with SECRETS_KEY_PREVIOUS first, as the rolling rotation of operating.md says; ' +
    'test/integration/secrets-rolling.test.ts runs those steps under signed traffic',
};

interface Step {
  line: string;
  /** What follows `npm run --silent `: call or admin, then its arguments. */
  tool: 'call' | 'admin';
  args: string[];
  comment: string;
}

/** The code blocks of every walked section, in walking order. */
function walkedBlocks(): string[][] {
  return WALKED_SECTIONS.flatMap(([file, heading]) => sectionBlocks(file, heading));
}

/** Splits a command line as sh does for the quoting the README uses ('…' and "…", no escapes). */
function words(text: string): string[] {
  return [...text.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

function stepOf(line: string): Step | null {
  const m = /^npm run --silent (call|admin) (.*?)(?:\s+#\s(.*))?$/.exec(line);
  if (!m) return null;
  // `[--decline]`, `[--now …]`: the optional parts are run too.
  const args = words(m[2]!.replace(/[[\]]/g, ''));
  if (args[0] !== '--') throw new Error(`no -- after npm run ${m[1]}: ${line}`);
  return { line, tool: m[1] as Step['tool'], args: args.slice(1), comment: m[3] ?? '' };
}

/**
 * What a comment promises of the JSON printed: `{"a","b":false}` an object with exactly the keys a and b, b
 * false; `[{…}]` an array of such objects; `n` any number.
 */
function expectPrinted(comment: string, printed: unknown, line: string): void {
  const m = /^(\[)?\{([^}]*)\}/.exec(comment);
  if (!m) return;
  const fields = [...m[2]!.matchAll(/"(\w+)"(?:\s*:\s*([^,]+))?/g)].map(([, key, value]) => ({
    key: key!,
    value: value?.trim(),
  }));
  const objects = m[1] ? (printed as Record<string, unknown>[]) : [printed as Record<string, unknown>];
  if (m[1]) expect(Array.isArray(printed), line).toBe(true);
  expect(objects.length, line).toBeGreaterThan(0);
  for (const object of objects) {
    expect(Object.keys(object).sort(), line).toEqual(fields.map((f) => f.key).sort());
    for (const { key, value } of fields) {
      if (value === 'n') expect(typeof object[key], `${line}: ${key}`).toBe('number');
      else if (value !== undefined) expect(object[key], `${line}: ${key}`).toEqual(JSON.parse(value));
    }
  }
}

function npmRun(tool: string, args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  return collect(spawn('npm', ['run', '--silent', tool, '--', ...args], { cwd: ROOT, env }));
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-readme-'));
let npm: ChildProcess | undefined;
let receiver: ChildProcess | undefined;
let receiverPort = 0;
let received = '';
let runtime: RuntimeFile;
let release: (() => void) | undefined;

beforeAll(async () => {
  release = await holdStartLock();
  const tmp = path.join(dir, 'tmp');
  fs.mkdirSync(tmp);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(await freePort()),
    METRICS_PORT: String(await freePort()),
    DB_PATH: path.join(dir, 'orders.db'),
    LOG_LEVEL: 'warn',
    TMPDIR: tmp,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    // Failed deliveries come back soon, should the receiver be slow to start.
    WEBHOOK_RETRY_BASE_MS: '200',
  };
  delete env.REDIS_URL;
  delete env.DATABASE_URL;
  // Its own process group, as a terminal gives it: afterAll stops everything it started.
  npm = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: 'ignore' });
  const file = runtimeFilePath(ROOT);
  await until(
    async () => readRuntimeFile(file)?.pid !== undefined && readRuntimeFile(file)!.apiUrl.endsWith(env.PORT!),
    120_000,
    'npm start ready, with data/runtime.json written',
  );
  runtime = readRuntimeFile(file)!;
}, 780_000);

afterAll(async () => {
  receiver?.kill('SIGTERM');
  if (npm?.pid) {
    try {
      process.kill(-npm.pid, 'SIGTERM');
      await until(async () => !fs.existsSync(runtimeFilePath(ROOT)), 60_000, 'npm start stopped');
    } catch {
      // already gone
    }
    try {
      process.kill(-npm.pid, 'SIGKILL');
    } catch {
      // gone, as it should be
    }
  }
  release?.();
  fs.rmSync(dir, { recursive: true, force: true });
}, 90_000);

/** Starts the README's receiver (`node -e "…listen(8089…"`) on a free port instead of 8089. */
async function startReceiver(line: string): Promise<void> {
  const code = /^node -e "(.*)"$/.exec(line)?.[1];
  expect(code, 'the receiver line: node -e "…"').toBeDefined();
  expect(code).toContain('8089');
  receiverPort = await freePort();
  receiver = spawn(process.execPath, ['-e', code!.replace('8089', String(receiverPort))], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  receiver.stdout!.on('data', (chunk: Buffer) => (received += chunk.toString()));
  await until(
    () =>
      fetch(`http://127.0.0.1:${receiverPort}/`, { method: 'POST', body: '{"ping":1}' }).then(
        (res) => res.ok,
        () => false,
      ),
    30_000,
    "the README's receiver listening",
  );
}

describe("the README's Trying it and operating.md's admin CLI, walked against npm start", () => {
  it('when each command runs as written, then it exits 0 and prints what its comment says', async () => {
    const env = operatorEnv();
    const demo = JSON.parse(fs.readFileSync(runtime.profile, 'utf8')) as { accessKey: string };
    const profileDir = path.dirname(runtime.profile);
    // What earlier commands printed, for the placeholders of later ones.
    let createdKey: string | undefined;
    let orderItemId: number | undefined;
    let webhookId: number | undefined;
    const ran: string[] = [];
    const skipped: string[] = [];

    for (const line of walkedBlocks().flat()) {
      if (line.startsWith('node -e ')) {
        await startReceiver(line);
        continue;
      }
      const step = stepOf(line);
      if (!step)
        throw new Error(`a line of a walked section that the walk does not know how to run: ${line}`);
      const listed = Object.keys(NOT_RUN).find((key) => line.includes(`npm run --silent ${key}`));
      if (listed) {
        skipped.push(listed);
        continue;
      }
      const args = step.args.map((arg, i) => {
        const option = step.args[i - 1];
        // The README's files are beside the profile, which is beside DB_PATH (a folder of this test's).
        if (/^data\/demo-[\w.-]+\.json$/.test(arg)) return path.join(profileDir, path.basename(arg));
        if (arg === 'AK...')
          // A client of the walk's own for cards and client:disable (disabling the demo would end the walk);
          // the demo client, whose orders the walk places, for webhooks.
          return step.args[0]!.startsWith('webhook:') ? demo.accessKey : createdKey!;
        // The item the README names is one the real order above bought: run as printed.
        if (option === '--order-item')
          expect(arg, `${line}: an item of the demo order`).toBe(String(orderItemId));
        if (option === '--webhook') return String(webhookId);
        if (option === '--url') return arg.replace(':8089', `:${receiverPort}`);
        return arg;
      });
      const run = await npmRun(step.tool, args, env);
      const shown = `${line}\n  ran: ${args.join(' ')}\n  stderr: ${run.stderr}`;
      expect(run.code, shown).toBe(0);
      ran.push(line);
      if (args.includes('--help') || args[0] === 'help') {
        expect(run.stdout + run.stderr, shown).toMatch(/usage/i);
        continue;
      }
      const printed = JSON.parse(run.stdout) as Record<string, unknown>;
      expectPrinted(step.comment, printed, shown);
      if (step.tool === 'call') expect(run.stderr, shown).toMatch(/HTTP 20\d/);
      if (args[0] === 'client:create') createdKey = printed.accessKey as string;
      if (args[0] === 'webhook:add') webhookId = printed.webhookId as number;
      if (step.tool === 'call' && step.comment.includes('bought')) {
        // Two copies of Middlemarch, both bought, whichever time the order is sent.
        const items = (
          printed.listings as { orderItems: { orderItemId: number; status: number }[] }[]
        ).flatMap((listing) => listing.orderItems);
        expect(
          items.map((item) => item.status),
          shown,
        ).toEqual([5, 5]);
        orderItemId = items[0]!.orderItemId;
      }
      if (step.comment.includes('the receiver prints')) {
        const orderId = String(printed.orderId);
        await until(
          async () => received.includes(`"orderId":${orderId}`),
          60_000,
          `the receiver printing an event of order ${orderId}`,
        );
      }
    }
    expect(skipped.sort()).toEqual(Object.keys(NOT_RUN).sort());
    // The walk reached every kind of step: orders, the admin CLI, webhooks.
    expect(ran.length).toBeGreaterThanOrEqual(15);
  }, 600_000); // about 20 npm runs of compiled commands: a few seconds each, far more on a loaded machine
});
