// The production build and `npm start`, in one file so that they run one after the other (both write dist/):
// `npm run build` compiles, and the Procfile's web command serves from dist/ with plain Node; `npm start` stops
// as a person expects: a signal to npm's own pid (not only Ctrl-C in its terminal) stops everything it
// started — web, worker, clock and its private Redis — within the shutdown bound.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { readProcfile } from '../../scripts/procfile.js';
import { freePort } from '../../scripts/redis.js';
import { sleep, until } from '../helpers/wait.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const dirs: string[] = [];
const groups: number[] = [];

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

async function startService(): Promise<{ npm: number; port: number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-start-'));
  dirs.push(dir);
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    DB_PATH: path.join(dir, 'orders.db'),
    LOG_LEVEL: 'warn',
  };
  delete env.REDIS_URL;
  delete env.DATABASE_URL;
  // Its own process group, as a terminal would give it: the test then sees every process it started.
  const npm = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: 'ignore' });
  groups.push(npm.pid!);
  for (let i = 0; i < 1200; i += 1) {
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (res) => res.ok,
      () => false,
    );
    if (ready) return { npm: npm.pid!, port };
    await sleep(100);
  }
  throw new Error('npm start did not get ready in 120 s');
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
