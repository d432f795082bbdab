// The production build and `npm start`, in one file so that they run one after the other (both write dist/):
// `npm run build` compiles, and the Procfile's web command serves from dist/ with plain Node; `npm start` stops
// as a person expects: a signal to npm's own pid (not only Ctrl-C in its terminal) stops everything it
// started — web, worker, clock and its private Redis — within the shutdown bound.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { readProcfile } from '../../scripts/procfile.js';
import { createDatabase, dropDatabase } from '../../scripts/postgres.js';
import { freePort } from '../../scripts/redis.js';
import { holdStartLock } from '../helpers/start-lock.js';
import { operatorEnv, sleep, until } from '../helpers/wait.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const dirs: string[] = [];
const groups: number[] = [];
let release: (() => void) | undefined;

// One npm start at a time per checkout: each writes data/runtime.json (test/start/readme-walk.test.ts too).
beforeAll(async () => {
  release = await holdStartLock();
}, 660_000);
afterAll(() => release?.());

afterEach(() => {
  for (const group of groups.splice(0)) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // already gone, as it should be
    }
  }
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** The pids still in a process group (npm start's, which every process it starts joins). */
function groupMembers(group: number): number[] {
  const out = execFileSync('ps', ['-eo', 'pid=,pgid='], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number))
    .filter(([, pgid]) => pgid === group)
    .map(([pid]) => pid!);
}

/** npm start's environment: its own port, database and temporary folder; no Redis or PostgreSQL given. */
async function startEnv(
  extra: NodeJS.ProcessEnv = {},
): Promise<{ env: NodeJS.ProcessEnv; port: number; tmp: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-start-'));
  dirs.push(dir);
  const tmp = path.join(dir, 'tmp');
  fs.mkdirSync(tmp);
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    METRICS_PORT: String(await freePort()),
    DB_PATH: path.join(dir, 'orders.db'),
    LOG_LEVEL: 'warn',
    // Where its private Redis keeps its folder: the test sees what is left behind.
    TMPDIR: tmp,
    ...extra,
  };
  delete env.REDIS_URL;
  if (!extra.DATABASE_URL) delete env.DATABASE_URL;
  return { env, port, tmp };
}

/** Runs an npm start that must fail: its exit code, what it printed, and whatever of it is still running. */
async function failedStart(extra: NodeJS.ProcessEnv, port?: number) {
  const { env, tmp } = await startEnv(port === undefined ? extra : { ...extra, PORT: String(port) });
  const npm = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  groups.push(npm.pid!);
  let output = '';
  npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => npm.once('exit', resolve));
  for (let i = 0; i < 100 && groupMembers(npm.pid!).length > 0; i += 1) await sleep(100);
  return { code, output, left: groupMembers(npm.pid!), tmpLeft: fs.readdirSync(tmp) };
}

async function startService(
  extra: NodeJS.ProcessEnv = {},
): Promise<{ npm: number; port: number; dir: string; output: () => string }> {
  const { env, port } = await startEnv(extra);
  // Its own process group, as a terminal would give it: the test then sees every process it started.
  const npm = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  groups.push(npm.pid!);
  let output = '';
  npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const started = { npm: npm.pid!, port, dir: path.dirname(env.DB_PATH!), output: () => output };
  for (let i = 0; i < 1200; i += 1) {
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (res) => res.ok,
      () => false,
    );
    if (ready) return started;
    await sleep(100);
  }
  throw new Error('npm start did not get ready in 120 s');
}

/** The pid of the private redis-server npm start runs (in its process group). */
function privateRedis(group: number): number | undefined {
  const out = execFileSync('ps', ['-eo', 'pid=,pgid=,comm='], { encoding: 'utf8' });
  const row = out
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .find(([, pgid, comm]) => Number(pgid) === group && comm === 'redis-server');
  return row ? Number(row[0]) : undefined;
}

describe('the compiled build', () => {
  it('when npm run build has run, then the Procfile web command serves /healthz from dist/ and stops on SIGTERM', async () => {
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'ignore' });
    expect(fs.existsSync(path.join(ROOT, 'dist/src/server.js'))).toBe(true);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-dist-'));
    dirs.push(dir);
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(port),
      METRICS_PORT: String(await freePort()),
      DB_PATH: path.join(dir, 'orders.db'),
      REDIS_URL: inject('redisUrl'),
      QUEUE_PREFIX: `dist${process.pid}`,
      LOG_LEVEL: 'warn',
    };
    delete env.DATABASE_URL;
    const web = spawn(process.execPath, readProcfile(ROOT).web!, { cwd: ROOT, env, stdio: 'ignore' });
    const exited = new Promise<number | null>((resolve) => web.once('exit', resolve));
    try {
      await until(
        () =>
          fetch(`http://127.0.0.1:${port}/healthz`).then(
            (res) => res.ok,
            () => false,
          ),
        30_000,
        'web from dist/ answering /healthz',
      );
    } finally {
      web.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  }, 180_000);
});

describe('npm start', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)(
    "when npm's pid gets %s, then nothing it started keeps running",
    async (signal) => {
      const { npm, port } = await startService();
      expect(groupMembers(npm).length).toBeGreaterThanOrEqual(5);
      process.kill(npm, signal);
      for (let i = 0; i < 400 && groupMembers(npm).length > 0; i += 1) await sleep(100);
      expect(groupMembers(npm)).toEqual([]);
      await expect(fetch(`http://127.0.0.1:${port}/readyz`)).rejects.toThrow();
    },
    180_000,
  );
});

describe('npm start when its private Redis dies', () => {
  it('then it starts Redis again, the service takes orders again, and it still stops at once', async () => {
    const { npm, port, dir, output } = await startService();
    const first = privateRedis(npm);
    expect(first).toBeDefined();
    process.kill(first!, 'SIGKILL');
    await until(() => Promise.resolve(output().includes('redis is back')), 60_000, 'redis started again');
    expect(privateRedis(npm)).not.toBe(first);
    // A real order, from another terminal as the README shows: accepted and settled on the new Redis.
    const env = operatorEnv();
    await expect
      .poll(
        () =>
          spawnSync(
            'npm',
            ['run', '--silent', 'call', '--', 'POST', '/v1/orders', path.join(dir, 'demo-order.json')],
            { cwd: ROOT, env, encoding: 'utf8' },
          ).stderr,
        { timeout: 60_000, interval: 1000 },
      )
      .toContain('Svc-Status: 2010');
    expect(output()).not.toContain('Unhandled error event');
    process.kill(npm, 'SIGTERM');
    // Within the web's, worker's and clock's ordinary stop, not the 30 s of a process stuck on a Redis gone.
    for (let i = 0; i < 200 && groupMembers(npm).length > 0; i += 1) await sleep(100);
    expect(groupMembers(npm)).toEqual([]);
    await expect(fetch(`http://127.0.0.1:${port}/readyz`)).rejects.toThrow();
  }, 300_000);
});

describe('npm start that cannot start', () => {
  it('when a setting is wrong, then it names it and exits 1 before starting anything', async () => {
    const bogus = await failedStart({ RECONCILE_CRON: 'bogus' });
    expect(bogus).toMatchObject({ code: 1, left: [], tmpLeft: [] });
    expect(bogus.output).toContain('RECONCILE_CRON');
    expect(bogus.output).not.toContain('Service ready');
    const port = await failedStart({ PORT: 'abc' });
    expect(port).toMatchObject({ code: 1, left: [], tmpLeft: [] });
    expect(port.output).toContain('PORT');
  }, 120_000);

  it('when its port is in use, then it says so and exits 1, leaving the other listener alone', async () => {
    const other = net.createServer((socket) => socket.end()).listen(0, '127.0.0.1');
    await new Promise((resolve) => other.once('listening', resolve));
    const { port } = other.address() as net.AddressInfo;
    try {
      const run = await failedStart({}, port);
      expect(run).toMatchObject({ code: 1, left: [], tmpLeft: [] });
      expect(run.output).toContain(`port ${port} on 127.0.0.1 is in use`);
      expect(run.output).not.toContain('Service ready');
      expect(other.listening).toBe(true);
    } finally {
      other.close();
    }
  }, 120_000);

  it('when the store cannot be opened after Redis started, then Redis and its folder go too', async () => {
    const run = await failedStart({ DB_PATH: '/proc/version/orders.db' });
    expect(run).toMatchObject({ code: 1, left: [], tmpLeft: [] });
    expect(run.output).not.toContain('Service ready');
  }, 120_000);
});

describe('operator commands while npm start runs', () => {
  it('when neither REDIS_URL nor the store is set, then admin and call reach the running service', async () => {
    const { npm, port, dir } = await startService();
    const runtime = path.join(ROOT, 'data', 'runtime.json');
    // Written once npm start has seen the web answer, which may be a moment after the test did.
    await until(async () => fs.existsSync(runtime), 30_000, 'data/runtime.json');
    expect(JSON.parse(fs.readFileSync(runtime, 'utf8'))).toMatchObject({ pid: expect.any(Number) });
    const env = operatorEnv();
    const reconcile = spawnSync('npm', ['run', '--silent', 'admin', '--', 'reconcile'], {
      cwd: ROOT,
      env,
      encoding: 'utf8',
    });
    expect(reconcile.stderr).toContain('of the running npm start');
    expect(reconcile.status).toBe(0);
    expect(JSON.parse(reconcile.stdout)).toMatchObject({ adjustmentsApplied: 0 });
    // DB_PATH set to the store npm start runs on aims nowhere else: its Redis comes from data/runtime.json too.
    const same = spawnSync('npm', ['run', '--silent', 'admin', '--', 'reconcile'], {
      cwd: ROOT,
      env: { ...env, DB_PATH: path.join(dir, 'orders.db') },
      encoding: 'utf8',
    });
    expect(same.stderr).toContain('REDIS_URL of the running npm start');
    expect(same.status).toBe(0);
    const call = spawnSync('npm', ['run', '--silent', 'call', '--', 'GET', '/v1/orders?limit=1'], {
      cwd: ROOT,
      env,
      encoding: 'utf8',
    });
    expect(call.stderr).toContain('HTTP 200');
    process.kill(npm, 'SIGTERM');
    for (let i = 0; i < 400 && groupMembers(npm).length > 0; i += 1) await sleep(100);
    expect(fs.existsSync(runtime)).toBe(false);
    await expect(fetch(`http://127.0.0.1:${port}/readyz`)).rejects.toThrow();
    // With no service running, a command that needs Redis says what to set instead of guessing.
    const refused = spawnSync('npm', ['run', '--silent', 'admin', '--', 'reconcile'], {
      cwd: ROOT,
      env,
      encoding: 'utf8',
    });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('set REDIS_URL');
  }, 240_000);
});

describe('operator commands after npm start runs again on another port', () => {
  it('then call reaches the new port from any folder, and reconcile judges by the running deadlines', async () => {
    const first = await startService();
    process.kill(first.npm, 'SIGTERM');
    for (let i = 0; i < 400 && groupMembers(first.npm).length > 0; i += 1) await sleep(100);
    const dbPath = path.join(first.dir, 'orders.db');
    const again = await startService({ DB_PATH: dbPath, QUEUED_STALE_AFTER_S: '5' });
    expect(again.port).not.toBe(first.port);
    // The demo profile, made by the first start, names no address that could outlive it.
    expect(JSON.parse(fs.readFileSync(path.join(first.dir, 'demo-client.json'), 'utf8'))).not.toHaveProperty(
      'baseUrl',
    );
    expect(fs.statSync(path.join(ROOT, 'data')).mode & 0o777).toBe(0o700);
    const runtime = path.join(ROOT, 'data', 'runtime.json');
    await until(async () => fs.existsSync(runtime), 30_000, 'data/runtime.json');
    const env = operatorEnv();
    // From another folder, as an operator in their home directory would run it.
    const elsewhere = os.tmpdir();
    const cli = (file: string, args: string[]) =>
      spawnSync(
        process.execPath,
        ['--import', import.meta.resolve('tsx'), path.join(ROOT, 'src/cli', file), ...args],
        {
          cwd: elsewhere,
          env,
          encoding: 'utf8',
        },
      );
    const call = cli('call.cli.ts', ['POST', '/v1/orders', path.join(ROOT, 'data', 'demo-dryrun.json')]);
    expect(call.stderr).toContain('Svc-Status: 2002');
    expect(call.stderr).not.toContain('sending to');
    const reconcile = cli('admin.cli.ts', ['reconcile']);
    expect(reconcile.stderr).toContain('QUEUED_STALE_AFTER_S');
    expect(reconcile.status).toBe(0);
    process.kill(again.npm, 'SIGTERM');
    for (let i = 0; i < 400 && groupMembers(again.npm).length > 0; i += 1) await sleep(100);
  }, 360_000);
});

describe('operator commands while npm start runs on PostgreSQL', () => {
  const serverUrl = inject('postgresUrl');
  it.skipIf(!serverUrl)(
    'when nothing is set in the second terminal, then the admin CLI opens the store with the key npm start was given',
    async () => {
      const name = `start_${crypto.randomBytes(6).toString('hex')}`;
      const databaseUrl = await createDatabase(serverUrl, name);
      try {
        const { npm } = await startService({
          DATABASE_URL: databaseUrl,
          SECRETS_KEY: crypto.randomBytes(32).toString('hex'),
        });
        const env = operatorEnv();
        const created = spawnSync(
          'npm',
          ['run', '--silent', 'admin', '--', 'client:create', '--name', 'Acme'],
          {
            cwd: ROOT,
            env,
            encoding: 'utf8',
          },
        );
        expect(created.stderr).toMatch(/DATABASE_URL.*SECRETS_KEY of the running npm start/);
        expect(created.status).toBe(0);
        expect(JSON.parse(created.stdout)).toMatchObject({ accessKey: expect.stringMatching(/^AK/) });
        process.kill(npm, 'SIGTERM');
        for (let i = 0; i < 400 && groupMembers(npm).length > 0; i += 1) await sleep(100);
      } finally {
        await dropDatabase(serverUrl, name);
      }
    },
    240_000,
  );
});
