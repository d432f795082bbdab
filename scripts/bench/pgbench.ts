// pgbench's TPC-B-like transactions (5 statements each, prepared) against a server, on a database of its own:
// what that server commits per second in the same window as a benchmark of the service.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { createDatabase, dropDatabase, requirePostgresBinDir } from '../postgres.js';

export interface PgbenchResult {
  clients: number;
  seconds: number;
  tps: number;
}

/** Runs `pgbench -M prepared -c clients -j 2 -T seconds` on a fresh database of scale `scale`; its tps. */
export async function runPgbench(
  serverUrl: string,
  { clients = 8, seconds = 20, scale = 8 }: { clients?: number; seconds?: number; scale?: number } = {},
): Promise<PgbenchResult> {
  const bin = requirePostgresBinDir('pgbench');
  const pgbench = path.join(bin, 'pgbench');
  const name = `pgbench_${process.pid}`;
  await dropDatabase(serverUrl, name);
  const url = await createDatabase(serverUrl, name);
  try {
    const run = promisify(execFile);
    await run(pgbench, ['-i', '-q', '-s', String(scale), url], { timeout: 300_000 });
    const { stdout } = await run(
      pgbench,
      ['-M', 'prepared', '-c', String(clients), '-j', '2', '-T', String(seconds), url],
      { timeout: (seconds + 120) * 1000 },
    );
    const tps = /tps = ([\d.]+)/.exec(stdout)?.[1];
    if (!tps) throw new Error(`pgbench printed no tps:\n${stdout}`);
    return { clients, seconds, tps: Number(tps) };
  } finally {
    await dropDatabase(serverUrl, name);
  }
}
