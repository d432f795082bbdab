// PostgreSQL for tests and local runs: DATABASE_URL when it is set, else a private, throw-away server
// (initdb in a fresh temporary directory, on a free loopback port, durability off) that stop() removes.
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { postgresProbe } from '../test/helpers/postgres.probe.js';
import { freePort } from './redis.js';

export interface RunningPostgres {
  /** A server URL, `postgres://USER@HOST:PORT/DB`. */
  url: string;
  /** Stops a server this module started and removes its data; a server found through DATABASE_URL is left alone. */
  stop(): Promise<void>;
  /** A private server's data directory (its postmaster.pid names the server process). */
  dataDir?: string;
  /**
   * A private server's pg_ctl, to take it away and bring it back as an operator would (restart tests): `restart`
   * and `stop` in the given shutdown mode, `start` on the same port with the same settings.
   */
  control?: {
    restart(mode: 'smart' | 'fast' | 'immediate'): Promise<void>;
    stop(mode: 'smart' | 'fast' | 'immediate'): Promise<void>;
    start(): Promise<void>;
  };
}

export const isRoot = (): boolean => process.getuid?.() === 0;

function versionOf(dir: string): number {
  const n = Number.parseFloat(path.basename(dir));
  return Number.isFinite(n) ? n : -1;
}

/** The bin directory of the newest PostgreSQL with initdb and pg_ctl, or null. */
export function findPostgresBinDir(): string | null {
  const base = '/usr/lib/postgresql';
  const hasTools = (dir: string) =>
    fs.existsSync(path.join(dir, 'initdb')) && fs.existsSync(path.join(dir, 'pg_ctl'));
  if (fs.existsSync(base)) {
    const versions = fs
      .readdirSync(base)
      .map((v) => path.join(base, v))
      .sort((a, b) => versionOf(b) - versionOf(a));
    for (const v of versions) {
      const bin = path.join(v, 'bin');
      if (hasTools(bin)) return bin;
    }
  }
  try {
    const bin = execFileSync('pg_config', ['--bindir'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    if (bin && hasTools(bin)) return bin;
  } catch {
    // no pg_config
  }
  return null;
}

/** The folder of PostgreSQL's tools; throws naming `tools` (what the caller runs) when there is none. */
export function requirePostgresBinDir(tools: string): string {
  const bin = findPostgresBinDir();
  if (!bin) throw new Error(`PostgreSQL is not installed on this machine (${tools})`);
  return bin;
}

/** Installs Debian package `name` when we are root and apt-get exists; false when we may not. */
export function aptInstall(name: string, missing: string): boolean {
  if (!isRoot() || !fs.existsSync('/usr/bin/apt-get')) return false;
  process.stderr.write(`${missing} not found; installing Debian package ${name}...\n`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', name], { stdio: 'inherit', env });
  return true;
}

/** Debian's postgresql package, when we are root and apt-get exists. */
function installPostgres(): string | null {
  return aptInstall('postgresql', 'PostgreSQL (initdb, pg_ctl)') ? findPostgresBinDir() : null;
}

/** The postgres OS user's uid and gid (initdb, the server and PgBouncer refuse to run as root). */
export function postgresUser(): { uid: number; gid: number } {
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    if (Number.isInteger(uid) && Number.isInteger(gid)) return { uid, gid };
  } catch {
    // fall through
  }
  throw new Error(
    'running as root, but there is no "postgres" OS user to run PostgreSQL as: install the postgresql package or set DATABASE_URL',
  );
}

/** Runs a PostgreSQL tool, as the postgres OS user when we are root. */
function runTool(binDir: string, tool: string, args: string[]): Promise<void> {
  return runAsPostgres(path.join(binDir, tool), args);
}

/** Runs `binary` to its end, as the postgres OS user when we are root; throws with what it printed. */
export async function runAsPostgres(binary: string, args: string[]): Promise<void> {
  const [cmd, argv] = isRoot() ? ['runuser', ['-u', 'postgres', '--', binary, ...args]] : [binary, args];
  try {
    await promisify(execFile)(cmd, argv, { encoding: 'utf8', cwd: os.tmpdir(), timeout: 60_000 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    const name = path.basename(binary);
    throw new Error(`${name} ${args.join(' ')} failed: ${e.stderr || e.stdout || e.message}`, { cause: err });
  }
}

/** A fresh temporary directory named `bookorders-<name>-…`, owned by the postgres OS user when we are root. */
export function postgresOwnedDir(name: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `bookorders-${name}-`));
  if (isRoot()) {
    const { uid, gid } = postgresUser();
    fs.chownSync(dir, uid, gid);
  }
  fs.chmodSync(dir, 0o700);
  return dir;
}

function readLog(dir: string): string {
  try {
    return fs.readFileSync(path.join(dir, 'log'), 'utf8');
  } catch {
    return '';
  }
}

/** Resolves once the server at `url` answers `SELECT 1`. */
export async function waitForPostgres(url: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const probe = postgresProbe(url);
    try {
      await probe.scalar('SELECT 1');
      await probe.close();
      return;
    } catch (err) {
      await probe.close().catch(() => undefined);
      if (Date.now() > deadline)
        throw new Error(`postgres at ${redact(url)} did not answer: ${(err as Error).message}`, {
          cause: err,
        });
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(invalid URL)';
  }
}

export interface PrivatePostgresOptions {
  /** fsync, synchronous_commit and full page writes on, as operators run it (benchmarks); off by default (tests). */
  durable?: boolean;
  /** More `-c name=value` settings, e.g. shared_preload_libraries=pg_stat_statements. */
  settings?: readonly string[];
}

/** Starts a private, throw-away PostgreSQL server on a free loopback port. */
export async function startPrivatePostgres(options: PrivatePostgresOptions = {}): Promise<RunningPostgres> {
  const durability = options.durable ? 'on' : 'off';
  const binDir = findPostgresBinDir() ?? installPostgres();
  if (!binDir) {
    throw new Error(
      'PostgreSQL (initdb, pg_ctl) is not installed and could not be installed: install it (apt-get install postgresql) or set DATABASE_URL',
    );
  }
  const dir = postgresOwnedDir('pg');
  const remove = () => fs.rmSync(dir, { recursive: true, force: true });
  try {
    await runTool(binDir, 'initdb', ['-D', dir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  } catch (err) {
    remove();
    throw err;
  }

  const stopServer = async () => {
    try {
      await runTool(binDir, 'pg_ctl', ['-D', dir, '-m', 'immediate', 'stop']);
    } catch {
      // not running (any more)
    }
  };
  // The free port may be taken before the server binds it: then another one.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const serverOptions = [
      `-p ${port}`,
      `-k ${dir}`,
      '-c listen_addresses=127.0.0.1',
      `-c fsync=${durability}`,
      `-c synchronous_commit=${durability}`,
      `-c full_page_writes=${durability}`,
      '-c max_connections=300',
      ...(options.settings ?? []).map((setting) => `-c ${setting}`),
    ].join(' ');
    const pgCtl = (...args: string[]) =>
      runTool(binDir, 'pg_ctl', ['-D', dir, '-l', path.join(dir, 'log'), '-w', '-o', serverOptions, ...args]);
    try {
      await pgCtl('start');
      const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
      await waitForPostgres(url);
      let stopped = false;
      return {
        url,
        dataDir: dir,
        control: {
          restart: (mode) => pgCtl('-m', mode, 'restart'),
          stop: (mode) => pgCtl('-m', mode, 'stop'),
          start: () => pgCtl('start'),
        },
        stop: async () => {
          if (stopped) return;
          stopped = true;
          await stopServer();
          remove();
        },
      };
    } catch (err) {
      const log = readLog(dir);
      await stopServer();
      if (attempt < 3 && /address already in use/i.test(log)) continue;
      remove();
      throw new Error(`${(err as Error).message}${log ? `\nserver log:\n${log}` : ''}`, { cause: err });
    }
  }
}

/** DATABASE_URL when it is set (it must answer), else a private server. */
export async function ensurePostgres(options: PrivatePostgresOptions = {}): Promise<RunningPostgres> {
  const given = process.env.DATABASE_URL;
  if (given) {
    await waitForPostgres(given);
    return { url: given, stop: () => Promise.resolve() };
  }
  return startPrivatePostgres(options);
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The URL of database `name` on the server at `serverUrl`. */
export function databaseUrl(serverUrl: string, name: string): string {
  const u = new URL(serverUrl);
  u.pathname = `/${encodeURIComponent(name)}`;
  return u.toString();
}

async function onServer(serverUrl: string, sql: string): Promise<void> {
  const probe = postgresProbe(serverUrl);
  try {
    await probe.exec(sql);
  } finally {
    await probe.close().catch(() => undefined);
  }
}

/** Creates database `name` on the server at `serverUrl` and returns its URL. */
export async function createDatabase(serverUrl: string, name: string): Promise<string> {
  await onServer(serverUrl, `CREATE DATABASE ${quoteIdent(name)}`);
  return databaseUrl(serverUrl, name);
}

/** Drops database `name` (if it exists) on the server at `serverUrl`, ending its open sessions. */
export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  await onServer(serverUrl, `DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
}
