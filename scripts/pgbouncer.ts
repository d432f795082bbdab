// PgBouncer for tests and benchmarks: a private, throw-away pooler (Debian's pgbouncer package, installed when
// missing and we may, as scripts/postgres.ts does for PostgreSQL) on a free loopback port in front of a
// PostgreSQL server, in transaction mode by default, with PgBouncer's defaults otherwise (no
// ignore_startup_parameters) but server_login_retry, 1 s as docs/operating.md advises. stop() stops it and removes
// its directory.
import fs from 'node:fs';
import path from 'node:path';
import { aptInstall, isRoot, postgresOwnedDir, runAsPostgres } from './postgres.js';
import { freePort } from './redis.js';

export interface RunningPgBouncer {
  /** The pooler's URL for the server URL's user and database: `postgres://USER@127.0.0.1:PORT/DB`. */
  url: string;
  /** The pooler's URL for database `name` on the server behind it. */
  databaseUrl(name: string): string;
  stop(): Promise<void>;
  /** Its directory: configuration, log, and the pid file naming the process. */
  dir: string;
}

export interface PgBouncerOptions {
  poolMode?: 'session' | 'transaction' | 'statement';
  /** max_client_conn (PgBouncer's default is 100: a test run opens more, from many test services at once). */
  maxClientConn?: number;
  /** default_pool_size: server connections per user and database (PgBouncer's default, 20). */
  defaultPoolSize?: number;
  /**
   * server_login_retry, seconds: after a failed connection to the server, PgBouncer tries again only this much
   * later, failing its clients meanwhile. Its default, 15, held orders up to 15 s after the server was back
   * (10.1-10.4 s in the restart test, whose server is away 20 s); 1 is what docs/operating.md advises.
   */
  serverLoginRetryS?: number;
}

function findPgBouncer(): string | null {
  for (const candidate of ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer']) {
    if (fs.existsSync(candidate)) return candidate;
  }
  return null;
}

/** Debian's pgbouncer package, when we are root and apt-get exists. */
function installPgBouncer(): string | null {
  return aptInstall('pgbouncer', 'pgbouncer') ? findPgBouncer() : null;
}

function readPid(dir: string): number | null {
  try {
    const pid = Number(fs.readFileSync(path.join(dir, 'pgbouncer.pid'), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Starts a private PgBouncer in front of the server at `serverUrl` (any database of it, its user). */
export async function startPgBouncer(
  serverUrl: string,
  {
    poolMode = 'transaction',
    maxClientConn = 100,
    defaultPoolSize = 20,
    serverLoginRetryS = 1,
  }: PgBouncerOptions = {},
): Promise<RunningPgBouncer> {
  const binary = findPgBouncer() ?? installPgBouncer();
  if (!binary)
    throw new Error('pgbouncer is not installed and could not be installed: apt-get install pgbouncer');
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username) || 'postgres';
  const dir = postgresOwnedDir('pgbouncer');
  const remove = () => fs.rmSync(dir, { recursive: true, force: true });
  const stop = async () => {
    const pid = readPid(dir);
    if (pid !== null && alive(pid)) {
      process.kill(pid, 'SIGTERM'); // immediate shutdown (SIGINT waits for its clients)
      for (let i = 0; i < 50 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
    }
  };
  // The free port may be taken before PgBouncer binds it: then another one.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const ini = path.join(dir, 'pgbouncer.ini');
    const password = decodeURIComponent(server.password);
    fs.writeFileSync(
      ini,
      [
        '[databases]',
        `* = host=${server.hostname} port=${server.port || 5432}${password ? ` password=${password}` : ''}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        `unix_socket_dir = ${dir}`,
        'auth_type = trust',
        `auth_file = ${path.join(dir, 'userlist.txt')}`,
        `pool_mode = ${poolMode}`,
        `max_client_conn = ${maxClientConn}`,
        `default_pool_size = ${defaultPoolSize}`,
        `server_login_retry = ${serverLoginRetryS}`,
        `logfile = ${path.join(dir, 'log')}`,
        `pidfile = ${path.join(dir, 'pgbouncer.pid')}`,
        '',
      ].join('\n'),
    );
    fs.writeFileSync(path.join(dir, 'userlist.txt'), `"${user}" ""\n`);
    if (isRoot()) for (const f of ['pgbouncer.ini', 'userlist.txt']) chownToDir(path.join(dir, f), dir);
    try {
      await runAsPostgres(binary, ['-d', '-q', ini]);
      const url = (database: string) =>
        `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
      await waitForListen(port, dir);
      return {
        url: url(decodeURIComponent(server.pathname.slice(1)) || 'postgres'),
        databaseUrl: url,
        dir,
        stop: async () => {
          await stop();
          remove();
        },
      };
    } catch (err) {
      await stop();
      const log = readLog(dir);
      if (attempt < 3 && /address already in use/i.test(log)) continue;
      remove();
      throw new Error(`${(err as Error).message}${log ? `\npgbouncer log:\n${log}` : ''}`, { cause: err });
    }
  }
}

function chownToDir(file: string, dir: string): void {
  const { uid, gid } = fs.statSync(dir);
  fs.chownSync(file, uid, gid);
}

function readLog(dir: string): string {
  try {
    return fs.readFileSync(path.join(dir, 'log'), 'utf8');
  } catch {
    return '';
  }
}

/** Resolves once PgBouncer says it listens on `port` (it daemonizes before it binds). */
async function waitForListen(port: number, dir: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!new RegExp(`listening on [^\\n]*:${port}\\b`).test(readLog(dir))) {
    const pid = readPid(dir);
    if (Date.now() > deadline || (pid !== null && !alive(pid)))
      throw new Error(`pgbouncer did not listen on port ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
