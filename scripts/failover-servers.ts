// Servers that fail over, for the failover tests and scripts/bench/failover.ts, on free loopback ports:
// - a Redis primary, a replica and three Sentinels watching them (quorum 2, a primary unanswered for 1 s is down);
// - a PostgreSQL primary and a standby made by pg_basebackup, streaming, named synchronous on the primary (a
//   commit returns once the standby has the WAL, so a promotion loses nothing acknowledged).
// Each stop() ends what it started and removes its directories.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { postgresProbe } from '../test/helpers/postgres.probe.js';
import {
  requirePostgresBinDir,
  postgresOwnedDir,
  runAsPostgres,
  startPrivatePostgres,
  waitForPostgres,
  type RunningPostgres,
} from './postgres.js';
import { freePort, waitForRedis } from './redis.js';

const MASTER = 'bookorders';
const SENTINELS = 3;

export interface RunningSentinels {
  /** REDIS_SENTINELS for the service: `127.0.0.1:p,127.0.0.1:p,127.0.0.1:p`. */
  sentinels: string;
  /** REDIS_SENTINEL_MASTER. */
  master: string;
  /** `127.0.0.1:port` of the server the Sentinels name primary now. */
  primary(): Promise<string>;
  /** SIGKILLs the primary now; resolves with its address. */
  killPrimary(): Promise<string>;
  stop(): Promise<void>;
}

async function distinctPorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

function until<T>(what: string, timeoutMs: number, step: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  const attempt = async (): Promise<T> => {
    const value = await step().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    return attempt();
  };
  return attempt();
}

/** A Redis primary with one replica behind three Sentinels. */
export async function startRedisSentinels(): Promise<RunningSentinels> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-sentinel-'));
  const servers = new Map<number, ChildProcess>();
  const sentinels: ChildProcess[] = [];
  const stopAll = async () => {
    await Promise.all([...servers.values(), ...sentinels].map((child) => stopChild(child)));
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const [primaryPort, replicaPort, ...sentinelPorts] = await distinctPorts(2 + SENTINELS);
    const server = (port: number, ...more: string[]) =>
      spawn(
        'redis-server',
        [
          ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
          ...['--dir', dir, '--dbfilename', `dump-${port}.rdb`, ...more],
        ],
        { stdio: 'ignore' },
      );
    servers.set(primaryPort!, server(primaryPort!));
    servers.set(replicaPort!, server(replicaPort!, '--replicaof', '127.0.0.1', String(primaryPort)));
    await Promise.all([primaryPort!, replicaPort!].map((port) => waitForRedis(`redis://127.0.0.1:${port}`)));
    for (const port of sentinelPorts) {
      const conf = path.join(dir, `sentinel-${port}.conf`);
      fs.writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${MASTER} 127.0.0.1 ${primaryPort} 2`,
          `sentinel down-after-milliseconds ${MASTER} 1000`,
          `sentinel failover-timeout ${MASTER} 10000`,
          '',
        ].join('\n'),
      );
      sentinels.push(spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' }));
    }
    const list = sentinelPorts.map((port) => `127.0.0.1:${port}`);
    const ask = async (): Promise<string> => {
      for (const address of list) {
        const client = new Redis(`redis://${address}`, { lazyConnect: true, maxRetriesPerRequest: 0 });
        client.on('error', () => undefined);
        try {
          await client.connect();
          const [host, port] = (await client.call('SENTINEL', 'get-master-addr-by-name', MASTER)) as string[];
          return `${host}:${port}`;
        } catch {
          // the next Sentinel
        } finally {
          client.disconnect();
        }
      }
      throw new Error('no Sentinel answers');
    };
    // Ready when every Sentinel knows the replica and the other Sentinels.
    await until('the Sentinels see the replica and each other', 30_000, async () => {
      for (const address of list) {
        const client = new Redis(`redis://${address}`, { maxRetriesPerRequest: 0 });
        client.on('error', () => undefined);
        try {
          const master = (await client.call('SENTINEL', 'master', MASTER)) as string[];
          const field = (name: string) => Number(master[master.indexOf(name) + 1]);
          if (field('num-slaves') < 1 || field('num-other-sentinels') < SENTINELS - 1) return undefined;
        } finally {
          client.disconnect();
        }
      }
      return true;
    });
    return {
      sentinels: list.join(','),
      master: MASTER,
      primary: ask,
      async killPrimary() {
        const address = await ask();
        const port = Number(address.split(':')[1]);
        const child = servers.get(port);
        if (!child) throw new Error(`the primary ${address} is not a server this module started`);
        child.kill('SIGKILL');
        servers.delete(port);
        return address;
      },
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

export interface RunningPostgresPair {
  /** DATABASE_URL for the service on `database`: both hosts, target_session_attrs=read-write. */
  urlOf(database: string): string;
  /** The primary's own URL (database `postgres`). */
  primaryUrl: string;
  /** The standby's own URL (database `postgres`). */
  standbyUrl: string;
  /** Stops the primary at once (`-m immediate`), as a host lost would. */
  losePrimary(): Promise<void>;
  /** `pg_ctl promote` of the standby; resolves once it accepts writes. */
  promoteStandby(): Promise<void>;
  stop(): Promise<void>;
}

/** A PostgreSQL primary and its synchronous standby. */
export async function startPostgresPair(): Promise<RunningPostgresPair> {
  const binDir = requirePostgresBinDir('initdb, pg_ctl, pg_basebackup');
  // A commit waits for the standby: synchronous_commit on (startPrivatePostgres turns it off for speed).
  const primary: RunningPostgres = await startPrivatePostgres({
    settings: ['synchronous_commit=on', 'wal_level=replica', 'max_wal_senders=10', 'wal_keep_size=256MB'],
  });
  const dir = postgresOwnedDir('standby');
  const pgCtl = (...args: string[]) => runAsPostgres(path.join(binDir, 'pg_ctl'), ['-D', dir, ...args]);
  let standbyStarted = false;
  const stop = async () => {
    if (standbyStarted) await pgCtl('-m', 'immediate', 'stop').catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
    await primary.stop();
  };
  try {
    const { port: primaryPort } = new URL(primary.url);
    await runAsPostgres(path.join(binDir, 'pg_basebackup'), [
      ...['-h', '127.0.0.1', '-p', primaryPort, '-U', 'postgres', '-D', dir, '-R', '-X', 'stream'],
      '--no-sync',
    ]);
    const port = await freePort();
    const options = [
      ...[`-p ${port}`, `-k ${dir}`, '-c listen_addresses=127.0.0.1', '-c fsync=off'],
      ...['-c synchronous_commit=on', '-c full_page_writes=off', '-c max_connections=300'],
    ].join(' ');
    await pgCtl('-l', path.join(dir, 'log'), '-w', '-o', options, 'start');
    standbyStarted = true;
    const standbyUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
    await waitForPostgres(standbyUrl);
    // Named synchronous only once it streams: a commit waits for ever for a standby that is not there yet.
    const probe = postgresProbe(primary.url);
    try {
      await until('the standby streams', 30_000, async () =>
        Number(await probe.scalar("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")) > 0
          ? true
          : undefined,
      );
      await probe.exec("ALTER SYSTEM SET synchronous_standby_names = '*'");
      await probe.exec('SELECT pg_reload_conf()');
      await until('the standby is synchronous', 30_000, async () =>
        Number(await probe.scalar("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")) > 0
          ? true
          : undefined,
      );
    } finally {
      await probe.close();
    }
    const hostPort = (url: string) => new URL(url).host;
    return {
      urlOf: (database) =>
        `postgres://postgres@${hostPort(primary.url)},${hostPort(standbyUrl)}/${database}?target_session_attrs=read-write`,
      primaryUrl: primary.url,
      standbyUrl,
      losePrimary: () => primary.control!.stop('immediate'),
      async promoteStandby() {
        await pgCtl('-w', 'promote');
        const standby = postgresProbe(standbyUrl);
        try {
          await until('the standby promoted', 30_000, async () =>
            (await standby.scalar<boolean>('SELECT pg_is_in_recovery()')) ? undefined : true,
          );
        } finally {
          await standby.close();
        }
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}
