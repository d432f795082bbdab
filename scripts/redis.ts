import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';

export interface RunningRedis {
  url: string;
  /** Stops a server this module started; a server found through REDIS_URL is left alone. */
  stop(): Promise<void>;
  process?: ChildProcess;
}

/** A free TCP port on the loopback interface. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function findRedisServer(): string | null {
  for (const candidate of ['/usr/bin/redis-server', '/usr/local/bin/redis-server']) {
    if (fs.existsSync(candidate)) return candidate;
  }
  try {
    return execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

/** Debian's redis-server package, when we are root and apt-get exists. */
function installRedisServer(): string | null {
  if (process.getuid?.() !== 0 || !fs.existsSync('/usr/bin/apt-get')) return null;
  process.stderr.write('redis-server not found; installing Debian package redis-server...\n');
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
  execFileSync('apt-get', ['install', '-y', '-qq', 'redis-server'], {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  return findRedisServer();
}

export async function waitForRedis(url: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.ping();
      client.disconnect();
      return;
    } catch (err) {
      client.disconnect();
      if (Date.now() > deadline)
        throw new Error(`redis at ${url} did not answer: ${(err as Error).message}`, { cause: err });
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Starts a private, disk-less redis-server on a free port (or on `port`). */
export async function startPrivateRedis(port?: number): Promise<RunningRedis> {
  const binary = findRedisServer() ?? installRedisServer();
  if (!binary) {
    throw new Error(
      'redis-server is not installed and could not be installed: install it (apt-get install redis-server) or set REDIS_URL',
    );
  }
  const chosen = port ?? (await freePort());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-redis-'));
  const child = spawn(
    binary,
    [
      '--port',
      String(chosen),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      '--daemonize',
      'no',
    ],
    { stdio: 'ignore' },
  );
  const url = `redis://127.0.0.1:${chosen}`;
  await waitForRedis(url);
  return {
    url,
    process: child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => {
          fs.rmSync(dir, { recursive: true, force: true });
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

/** REDIS_URL when it is set, else a private server. */
export async function ensureRedis(): Promise<RunningRedis> {
  const given = process.env.REDIS_URL;
  if (given) {
    await waitForRedis(given);
    return { url: given, stop: () => Promise.resolve() };
  }
  return startPrivateRedis();
}
