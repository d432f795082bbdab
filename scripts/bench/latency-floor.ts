// The floor of an order's wait on this machine, measured in the same run as the waits (bench-latency.ts): one
// fdatasync of 4 KiB, one transaction of a single pgbench client on the durable PostgreSQL server, one Redis
// round trip; and the durable commits an order needs on each store.
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { percentile } from './samples.js';
import { postgresServer, type StoreKind } from './stores.js';
import { createDatabase, dropDatabase, requirePostgresBinDir } from '../postgres.js';

/** One write of 4 KiB and its fdatasync, `n` times, in the folder SQLite's files are made in; ms at p50. */
export function fdatasyncP50(n = 200): number {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-latency-sync-'));
  const fd = fs.openSync(path.join(dir, 'sync'), 'w');
  const page = crypto.randomBytes(4096);
  const ms: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      fs.writeSync(fd, page, 0, page.length, (i % 16) * 4096);
      const started = performance.now();
      fs.fdatasyncSync(fd);
      ms.push(performance.now() - started);
    }
  } finally {
    fs.closeSync(fd);
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return percentile(ms, 50);
}

/** pgbench's TPC-B-like transaction from one client (-c 1 -j 1, prepared) on the durable server; average ms. */
export async function pgbenchOneClientMs(seconds = 5): Promise<number> {
  const bin = requirePostgresBinDir('pgbench');
  const serverUrl = (await postgresServer()).url;
  const name = `pgbench_latency_${process.pid}`;
  await dropDatabase(serverUrl, name);
  const url = await createDatabase(serverUrl, name);
  try {
    const run = promisify(execFile);
    const pgbench = path.join(bin, 'pgbench');
    await run(pgbench, ['-i', '-q', '-s', '1', url], { timeout: 120_000 });
    const { stdout } = await run(
      pgbench,
      ['-M', 'prepared', '-c', '1', '-j', '1', '-T', String(seconds), url],
      {
        timeout: (seconds + 60) * 1000,
      },
    );
    const latency = /latency average = ([\d.]+) ms/.exec(stdout)?.[1];
    if (!latency) throw new Error(`pgbench printed no latency:\n${stdout}`);
    return Number(latency);
  } finally {
    await dropDatabase(serverUrl, name);
  }
}

/** A PING's round trip to the run's Redis, `n` times one after the other; ms at p50. */
export async function redisRoundTripP50(url: string, n = 500): Promise<number> {
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  try {
    await redis.ping();
    const ms: number[] = [];
    for (let i = 0; i < n; i++) {
      const started = performance.now();
      await redis.ping();
      ms.push(performance.now() - started);
    }
    return percentile(ms, 50);
  } finally {
    redis.disconnect();
  }
}

/**
 * The commits one order needs (acceptance, reservation, settlement): three durable commits, the aims' measure. A
 * synchronous order on SQLite waits for one flush of them: the settlement's covers the acceptance and the
 * reservation too (flushed-store.ts).
 */
const COMMITS = 3;

export interface Floor {
  fdatasyncMs: number;
  pgbenchMs?: number;
  redisMs: number;
  /** BullMQ's own no-op job at each number in flight of the rows (noop-floor.ts): ms at p50, Redis commands. */
  noop?: { inFlight: number; p50Ms: number; redisCommands: number }[];
}

/** The durable commits of one order on `kind`: COMMITS fdatasyncs on SQLite, COMMITS pgbench transactions on PostgreSQL. */
export const commitsMs = (kind: StoreKind, floor: Floor) =>
  COMMITS * (kind === 'sqlite' ? floor.fdatasyncMs : (floor.pgbenchMs ?? NaN));
