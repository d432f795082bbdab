import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

export interface RunningRedis {
  url: string;
  /** Stops a server this module started; a server found through REDIS_URL is left alone. */
  stop(): Promise<void>;
  process?: ChildProcess;
}

/** Whether a server may listen on `port` on every interface now (as the web does), by listening and closing. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, () => server.close(() => resolve(true)));
  });
}

/** The lowest port the kernel gives as the local end of outgoing connections (Linux), or null where unknown. */
function lowestOutgoingPort(): number | null {
  try {
    return Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return null;
  }
}

/** A port the kernel chose free on the loopback interface (from the range of outgoing connections). */
function anyPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A TCP port free on every interface, for a server started next. Chosen at random below the range the kernel gives
 * outgoing connections: a port from that range, free when checked, may become the local end of a connection to
 * Redis or PostgreSQL (tests and benchmarks open thousands) before the server listens on it, which then fails
 * with EADDRINUSE (seen in CI). Outside that range only another such choice can take it, and a port taken is
 * skipped. Where the range cannot be read, a port the kernel chooses.
 */
export async function freePort(): Promise<number> {
  const high = lowestOutgoingPort() ?? 0;
  const low = Math.max(1024, high - 12_000);
  if (high - low < 1000) return anyPort();
  for (let tries = 0; tries < 50; tries++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (await canListen(port)) return port;
  }
  return anyPort();
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
        // Ctrl-C reaches the whole process group: the server may have exited already; its folder goes too.
        const removed = () => {
          fs.rmSync(dir, { recursive: true, force: true });
          resolve();
        };
        if (child.exitCode !== null || child.signalCode !== null) return removed();
        child.once('exit', removed);
        child.kill('SIGTERM');
      }),
  };
}

/** REDIS_URL when it is set, else a private server. */
export async function ensureRedis(): Promise<RunningRedis> {
  const given = process.env.REDIS_URL;
  if (given) {
    // A cluster's seed list (`redis://login@h:p,h:p`): its first seed answering is enough to start.
    await waitForRedis(given.split(',')[0]!);
    return { url: given, stop: () => Promise.resolve() };
  }
  return startPrivateRedis();
}

export interface RunningRedisCluster {
  /** `127.0.0.1:port` of each master. */
  nodes: string[];
  /** The service's REDIS_URL for it (with REDIS_CLUSTER=true), every node a seed: `redis://h:p,h:p,h:p`. */
  url: string;
  /** Stops every node and removes their directory. */
  stop(): Promise<void>;
}

const CLUSTER_NODES = 3;

/**
 * Starts a private, disk-less Redis Cluster of three masters without replicas on free ports, and resolves
 * once every node reports `cluster_state:ok`. Needs Redis 7 or later (`--cluster-port`, so that a bus port
 * need not be the client port + 10000) and redis-cli beside redis-server.
 */
export async function startRedisCluster(): Promise<RunningRedisCluster> {
  const binary = findRedisServer() ?? installRedisServer();
  if (!binary) throw new Error('redis-server is not installed and could not be installed');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookorders-redis-cluster-'));
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(children.map(stopChild));
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const ports = await distinctFreePorts(CLUSTER_NODES * 2);
    const nodes: string[] = [];
    for (let i = 0; i < CLUSTER_NODES; i++) {
      const [port, busPort] = [ports[2 * i]!, ports[2 * i + 1]!];
      children.push(spawnClusterNode(binary, dir, port, busPort));
      nodes.push(`127.0.0.1:${port}`);
    }
    await Promise.all(nodes.map((node) => waitForRedis(`redis://${node}`)));
    const cli = path.join(path.dirname(binary), 'redis-cli');
    await promisify(execFile)(
      fs.existsSync(cli) ? cli : 'redis-cli',
      ['--cluster', 'create', ...nodes, '--cluster-replicas', '0', '--cluster-yes'],
      { timeout: 30_000 },
    );
    await Promise.all(nodes.map((node) => waitForClusterOk(node, 20_000)));
    return { nodes, url: `redis://${nodes.join(',')}`, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

function spawnClusterNode(binary: string, dir: string, port: number, busPort: number): ChildProcess {
  return spawn(
    binary,
    [
      ...['--port', String(port), '--cluster-port', String(busPort), '--bind', '127.0.0.1'],
      ...['--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, `nodes-${port}.conf`)],
      ...['--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no'],
    ],
    { stdio: 'ignore' },
  );
}

async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

async function waitForClusterOk(node: string, timeoutMs: number): Promise<void> {
  const client = new Redis(`redis://${node}`, { maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      const info = await client.cluster('INFO').catch(() => '');
      if (/^cluster_state:ok\r?$/m.test(info)) return;
      if (Date.now() > deadline) throw new Error(`redis cluster node ${node} is not ok: ${info}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    client.disconnect();
  }
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}
